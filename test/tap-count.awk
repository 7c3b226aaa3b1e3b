# SPDX-License-Identifier: BSD-3-Clause
#
# Counts one program's TAP stream the way automake's TAP driver does, for
# the runners that count by themselves (check-vm): "ok" passes, "ok # SKIP"
# is a skip, "not ok" fails, and so does "not ok # SKIP" (a skip is said by
# "ok"; tap-cmocka.awk turns cmocka's skips into that form first); "not ok
# # TODO" is an expected failure (a pass), "ok # TODO" an unexpected pass
# (a failure). A plan of 1..0 is one skip. Prints
#
#   PASSED FAILED SKIPPED [why]
#
# where why, if any, is a failure the results cannot show: no plan, a bail
# out, or fewer or more results than planned.

/^1\.\.[0-9]+/ {
	plan = substr($1, 4) + 0
	have_plan = 1
	if (plan == 0)
		skip++
	next
}

/^(not )?ok([ \t]|$)/ {
	n++
	ok = !/^not ok/
	if (/#[ \t]*[Ss][Kk][Ii][Pp]([^A-Za-z]|$)/) {
		if (ok)
			skip++
		else
			fail++
		next
	}
	if (/#[ \t]*[Tt][Oo][Dd][Oo]([^A-Za-z]|$)/)
		ok = !ok
	if (ok)
		pass++
	else
		fail++
	next
}

/^Bail out!/ {
	bail = 1
}

END {
	if (!have_plan)
		why = "no plan"
	else if (bail)
		why = "bailed out"
	else if (plan != n && plan != 0)
		why = n " results for a plan of " plan
	printf "%d %d %d %s\n", pass, fail, skip, why
}
