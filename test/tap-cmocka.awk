# SPDX-License-Identifier: BSD-3-Clause
#
# One counting rule for every TAP stream of the suite (make check, the
# capability matrix, check-vm):
#
#   - a skip says why: cmocka 1.1 writes a skipped case as
#     "not ok N # SKIP name", which TAP (and automake) counts as a failure.
#     The case's reason is the first "# skip: WHY" (or "# SKIP WHY") line
#     it printed (the tests' skip helpers print it); the case becomes
#     "ok N - name # SKIP WHY". A skip that gave no reason is a failure.
#   - everything else passes through unchanged, so a failure stays one.
#
# Run as: PROGRAM | awk -f tap-cmocka.awk

/^# (skip:|SKIP) / {
	if (why == "") {
		why = $0
		sub(/^# (skip:|SKIP) /, "", why)
	}
	print
	next
}

/^not ok [0-9]+ # SKIP/ {
	name = $0
	sub(/^not ok [0-9]+ # SKIP[ \t]*/, "", name)
	if (why != "")
		print "ok " $3 " - " name " # SKIP " why
	else
		print "not ok " $3 " - " name ": skipped without a reason"
	why = ""
	next
}

/^(not )?ok([ \t]|$)/ {
	why = ""
}

{ print }
