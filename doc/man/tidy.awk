# scdoc's output, cleaned of the paragraph macros that start no paragraph
# (mandoc -T lint warns about each): a .P right after a heading or before
# another break goes, and a .P before the end of an indent moves after it,
# so the space between two indented items stays.
function is_break(l) { return l ~ /^\.(SH|SS|P|PP|RE|TH|RS)( |$)/ }
{
	if (held && $0 == ".RE") {
		print
		last = $0
		after_re = 1
		next
	}
	if (held) {
		held = 0
		if (!is_break($0) && (after_re || !is_break(last)))
			print ".P"
		after_re = 0
	}
	if ($0 == ".P") {
		held = 1
		next
	}
	print
	last = $0
}
