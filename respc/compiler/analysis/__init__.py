"""What the compiler knows about a regex delimiter before it writes a scan for it, one concern a module.

* `syntax`: the subset of syntax on which Python's regex parser and the `regex` module agree, and
  Python's parse tree of a pattern; every analysis reads only that subset (anything else: unknown);
* `starts`: the characters every match starts with (the skip-scan fast path) and a literal prefix
  every match starts with (end-of-stream scans `str.find` it first);
* `empty`: whether a pattern can match the empty string, and whether two can at one position (a
  field whose open and close both can there hangs transformers: quirk Q5);
* `lead`: `\\s*X`-style patterns, searched as `X` with a walk back over the run (and alternations whose
  branches start so, `\\s*;x|<e>`, for the fast modes' facts), and patterns that are a literal and
  perhaps a run (end-of-stream scans find them with `str.find`);
* `rare`: the character of a literal to find first (`memchr`) in end-of-stream scans;
* `guards`: branches that can match only at the buffer's start or right after one character (`^...`,
  `(?<=;)...`), which the fast modes set aside while the parser is past them;
* `stable`: patterns whose matches read nothing past their end (5.24's recheck is left out);
* `backtracking`: shapes that may backtrack exponentially (a warning, not an error).

Each answer errs on the safe side for its use: an unknown first character disables the fast path,
an unsure empty match refuses the template, an unsure lead split keeps the plain search.
"""

from respc.compiler.analysis.backtracking import backtracking_risk
from respc.compiler.analysis.empty import empty_together, may_match_empty
from respc.compiler.analysis.guards import (
    LOOKS_BACK,
    anchored_heads,
    guarded,
    lookbehind_literals,
    reads_back,
    reads_before,
)
from respc.compiler.analysis.lead import branch_lead, literal_run, split_lead
from respc.compiler.analysis.rare import rare_char
from respc.compiler.analysis.stable import stable_end
from respc.compiler.analysis.starts import (
    first_chars,
    lazy_tail,
    leading_literals,
    literal_alternatives,
    literal_prefix,
    literal_strings,
    looked_at_strings,
    match_first_chars,
    run_tail,
)
from respc.compiler.analysis.syntax import is_plain

__all__ = [
    "LOOKS_BACK",
    "anchored_heads",
    "backtracking_risk",
    "branch_lead",
    "empty_together",
    "first_chars",
    "guarded",
    "is_plain",
    "lazy_tail",
    "leading_literals",
    "literal_alternatives",
    "literal_prefix",
    "literal_run",
    "literal_strings",
    "lookbehind_literals",
    "looked_at_strings",
    "match_first_chars",
    "may_match_empty",
    "rare_char",
    "reads_back",
    "reads_before",
    "run_tail",
    "split_lead",
    "stable_end",
]
