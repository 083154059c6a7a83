package constraint

// The rows below are the constraint tables and cheat-sheet bullets of
// seed 000 ("Constraint Expression Syntax", "Defining Constraints") and of
// supervisor-services/compatibility.md, each with its stated meaning turned
// into versions that must and must not satisfy it. The fuzz targets use the
// same rows as their seed corpus.

type validRow struct {
	meaning string
	expr    string
	allow   []string
	deny    []string
}

type invalidRow struct {
	meaning string
	expr    string
	// reason is a fragment the error must contain, so the administrator
	// learns what to change.
	reason string
}

var syntaxAValid = []validRow{
	// Seed 000 "Syntax A" examples table.
	{meaning: "1.5.0 or any later version", expr: ">=1.5.0",
		allow: []string{"1.5.0", "1.5.1", "2.0.0", "10.0.0"}, deny: []string{"1.4.9", "1.0.0", "0.0.1"}},
	{meaning: "greater than 1.0.0 and less than 2.0.0", expr: ">1.0.0 <2.0.0",
		allow: []string{"1.0.1", "1.5.0", "1.9.9"}, deny: []string{"1.0.0", "2.0.0", "0.9.0", "2.0.1"}},
	{meaning: "at least 1.5.0 and below 2.0.0, or at least 2.1.0", expr: ">=1.5.0 <2.0.0 || >=2.1.0",
		allow: []string{"1.5.0", "1.9.9", "2.1.0", "3.0.0"}, deny: []string{"1.4.9", "2.0.0", "2.0.9"}},
	{meaning: "any 1.2.* version", expr: "1.2.x",
		allow: []string{"1.2.0", "1.2.7", "1.2.99"}, deny: []string{"1.1.9", "1.3.0", "2.2.0"}},

	// compatibility.md cheat sheet: operators.
	{meaning: "= is equality", expr: "=1.2.3", allow: []string{"1.2.3"}, deny: []string{"1.2.4", "1.2.2"}},
	{meaning: "== is equality", expr: "==1.2.3", allow: []string{"1.2.3"}, deny: []string{"1.2.4"}},
	{meaning: "equality is the default operator", expr: "1.2.3", allow: []string{"1.2.3"}, deny: []string{"1.2.4"}},
	{meaning: "!= is inequality", expr: "!=1.2.3", allow: []string{"1.2.4", "1.2.2"}, deny: []string{"1.2.3"}},
	{meaning: "! is inequality", expr: "!1.2.3", allow: []string{"1.2.4"}, deny: []string{"1.2.3"}},
	{meaning: "> is strictly greater", expr: ">1.2.3", allow: []string{"1.2.4"}, deny: []string{"1.2.3", "1.2.2"}},
	{meaning: "< is strictly less", expr: "<1.2.3", allow: []string{"1.2.2"}, deny: []string{"1.2.3", "1.2.4"}},
	{meaning: ">= is greater or equal", expr: ">=1.2.3", allow: []string{"1.2.3", "1.2.4"}, deny: []string{"1.2.2"}},
	{meaning: "<= is less or equal", expr: "<=1.2.3", allow: []string{"1.2.3", "1.2.2"}, deny: []string{"1.2.4"}},
	// Combinators.
	{meaning: "whitespace is AND", expr: ">=1.0.0 !=1.5.0 <2.0.0",
		allow: []string{"1.0.0", "1.4.0", "1.6.0"}, deny: []string{"1.5.0", "2.0.0"}},
	{meaning: "|| is OR", expr: "<1.0.0 || >=3.0.0",
		allow: []string{"0.9.0", "3.0.0"}, deny: []string{"1.0.0", "2.9.9"}},
	{meaning: "AND binds tighter than OR", expr: ">=1.0.0 <1.5.0 || >=2.0.0 <2.5.0",
		allow: []string{"1.0.0", "1.4.9", "2.0.0", "2.4.9"}, deny: []string{"1.5.0", "1.9.9", "2.5.0"}},
	// Wildcards.
	{meaning: "1.2.x is >=1.2.0 <1.3.0", expr: "1.2.x",
		allow: []string{"1.2.0", "1.2.9"}, deny: []string{"1.1.99", "1.3.0"}},
	{meaning: "1.x is >=1.0.0 <2.0.0", expr: "1.x",
		allow: []string{"1.0.0", "1.99.99"}, deny: []string{"0.9.9", "2.0.0"}},
	{meaning: "a wildcard with an operator: >1.2.x is >=1.3.0", expr: ">1.2.x",
		allow: []string{"1.3.0", "2.0.0"}, deny: []string{"1.2.9"}},
	{meaning: "a wildcard with an operator: <=1.x is <2.0.0", expr: "<=1.x",
		allow: []string{"1.99.0", "0.1.0"}, deny: []string{"2.0.0"}},
	{meaning: "an x in a pre-release is not a wildcard", expr: ">=1.0.0-box.1",
		allow: []string{"1.0.0-box.2", "1.0.0"}, deny: []string{"1.0.0-box.0", "0.9.0"}},

	// Seed 000 "Defining Constraints": Kubernetes version selection
	// (checked against tolerantly parsed environment versions).
	{meaning: "Kubernetes 1.30.0 or later", expr: ">=1.30.0",
		allow: []string{"1.30.0", "v1.30.2+vmware.1", "v1.31.0"}, deny: []string{"v1.29.9+vmware.2", "1.29.0"}},
	// Source upgrade: v2.0.0 only from v1.5.0 or later.
	{meaning: "only allow upgrade to this version if the installed version is >= 1.5.0", expr: ">=1.5.0",
		allow: []string{"1.5.0", "1.9.0"}, deny: []string{"1.0.0", "1.4.9"}},
	// Destination upgrade: from v1.0.0 only to versions < 2.0.0.
	{meaning: "from this version, only allow upgrade to a version < 2.0.0", expr: "<2.0.0",
		allow: []string{"1.0.1", "1.9.9"}, deny: []string{"2.0.0", "3.0.0"}},
	// Combined example.
	{meaning: "only upgraded from a version > 1.0.0", expr: ">1.0.0",
		allow: []string{"1.0.1", "2.0.0"}, deny: []string{"1.0.0", "0.9.0"}},
	{meaning: "only upgraded to a version < 3.0.0", expr: "<3.0.0",
		allow: []string{"2.9.9", "1.0.0"}, deny: []string{"3.0.0", "3.1.0"}},

	// An empty constraint string means "always compatible".
	{meaning: "empty is always compatible", expr: "", allow: []string{"0.0.0", "1.2.3", "99.0.0"}},
	{meaning: "blank is always compatible", expr: "   ", allow: []string{"1.2.3"}},
}

var syntaxAInvalid = []invalidRow{
	{meaning: "no grouping with ( )", expr: "(>=1.0.0 <2.0.0) || >=3.0.0", reason: "no grouping"},
	{meaning: "capital X is not a wildcard", expr: "1.2.X", reason: "lowercase x"},
	{meaning: "a bare * is not recognized", expr: "*", reason: "lowercase x"},
	{meaning: "&& is not supported", expr: ">=1.0.0 && <2.0.0", reason: "AND is whitespace"},
	{meaning: "hyphen ranges are not supported", expr: "1.0.0 - 2.0.0", reason: "hyphen ranges"},
	{meaning: "a single | is not OR", expr: "1.0.0 | 2.0.0", reason: "unexpected \"|\""},
	{meaning: "a stray wildcard token", expr: ">=1.0.0 x", reason: "unexpected \"x\""},
	{meaning: "a lone number is not a version", expr: ">=1.0.0 5", reason: "\"5\" is not a version"},
	{meaning: "tilde is not supported", expr: "~1.2.3", reason: "tilde and caret"},
	{meaning: "caret is not supported", expr: "^1.2.3", reason: "tilde and caret"},
	// ParseRange alone would read these as "=1.2.0" / "=1.0.0".
	{meaning: "tilde is not supported, even with a wildcard", expr: "~1.2.x", reason: "unsupported operator \"~\""},
	{meaning: "caret is not supported, even with a wildcard", expr: "^1.x", reason: "unsupported operator \"^\""},
	{meaning: "the Syntax B pessimistic operator is not Syntax A", expr: "~>1.2.x", reason: "unsupported operator \"~>\""},
	{meaning: "garbage before a wildcard version", expr: "abc1.2.x", reason: "unsupported operator \"abc\""},
	{meaning: "x stands for the last segment only", expr: ">= 1.x.3", reason: "one last segment"},
	{meaning: "x stands for one segment (ParseRange would read 1.x.x as 1.0.x)", expr: "1.x.x", reason: "one last segment"},
	{meaning: "x is a whole segment", expr: "1.2x", reason: "one last segment"},
	{meaning: "a negated wildcard would match nothing", expr: "!=1.2.x", reason: "<1.2.0 || >=1.3.0"},
	{meaning: "a negated wildcard (!) would match nothing", expr: ">=0.1.0 !1.x", reason: "would match no version"},
	{meaning: "commas are not Syntax A", expr: ">1.0.0, <2.0.0", reason: "not commas"},
	{meaning: "versions must be semver", expr: ">=1.5", reason: "1.5"},
	{meaning: "four segments are not semver", expr: ">=9.0.0.0", reason: "9.0.0.0"},
	{meaning: "dangling OR", expr: ">=1.0.0 ||", reason: "'||'"},
	{meaning: "leading OR", expr: "|| >=1.0.0", reason: "'||'"},
	{meaning: "unknown comparator", expr: "=>1.0.0", reason: "=>"},
	{meaning: "not a version at all", expr: "latest", reason: "latest"},
}

var syntaxBValid = []validRow{
	// Seed 000 "Syntax B" examples table.
	{meaning: "9.0.0.0 or later", expr: ">=9.0.0.0",
		allow: []string{"9.0.0.0", "9.0.0.1", "9.1.0.0", "10.0.0.0"}, deny: []string{"8.9.9.9", "8.0.0.0"}},
	{meaning: "strictly between 9.0.0.0 and 9.1.0.0", expr: ">9.0.0.0, <9.1.0.0",
		allow: []string{"9.0.0.1", "9.0.5.0", "9.0.99.99"}, deny: []string{"9.0.0.0", "9.1.0.0", "9.2.0.0"}},
	{meaning: "at least 9.0.1 and less than 9.1", expr: "~>9.0.1",
		allow: []string{"9.0.1", "9.0.1.0", "9.0.9.5"}, deny: []string{"9.0.0.9", "9.1.0.0", "10.0.1.0"}},

	// compatibility.md cheat sheet: operators.
	{meaning: "= is equality", expr: "=9.0.0.0", allow: []string{"9.0.0.0", "9.0"}, deny: []string{"9.0.0.1"}},
	{meaning: "equality is the default operator", expr: "9.0.0.0", allow: []string{"9.0.0.0"}, deny: []string{"9.0.0.1"}},
	{meaning: "!= is inequality", expr: "!=9.0.0.0", allow: []string{"9.0.0.1"}, deny: []string{"9.0.0.0"}},
	{meaning: "> is strictly greater", expr: ">9.0.0.0", allow: []string{"9.0.0.1"}, deny: []string{"9.0.0.0"}},
	{meaning: "< is strictly less", expr: "<9.0.0.0", allow: []string{"8.9.9.9"}, deny: []string{"9.0.0.0"}},
	{meaning: ">= is greater or equal", expr: ">=9.0.0.0", allow: []string{"9.0.0.0"}, deny: []string{"8.9.9.9"}},
	{meaning: "<= is less or equal", expr: "<=9.0.0.0", allow: []string{"9.0.0.0"}, deny: []string{"9.0.0.1"}},
	{meaning: "~> is pessimistic: ~>9.0.1 is >=9.0.1, <9.1.0", expr: "~>9.0.1",
		allow: []string{"9.0.1"}, deny: []string{"9.1.0"}},
	// Combinator.
	{meaning: ", is AND", expr: ">=9.0.0.0, !=9.0.1.0, <9.1.0.0",
		allow: []string{"9.0.0.0", "9.0.2.0"}, deny: []string{"9.0.1.0", "9.1.0.0"}},
	// Missing segments are treated as zero.
	{meaning: ">9.0 has missing segments treated as zero", expr: ">9.0",
		allow: []string{"9.0.0.1", "9.1"}, deny: []string{"9.0.0.0", "9"}},
	{meaning: ">9.0.0 has missing segments treated as zero", expr: ">9.0.0",
		allow: []string{"9.0.0.1", "9.1"}, deny: []string{"9.0.0.0", "9"}},
	{meaning: ">9.0.0.0 is the same constraint", expr: ">9.0.0.0",
		allow: []string{"9.0.0.1", "9.1"}, deny: []string{"9.0.0.0", "9"}},

	// Seed 000 "Defining Constraints" A: requires Supervisor 9.2.0.0 or later.
	{meaning: "requires Supervisor 9.2.0.0 or later", expr: ">=9.2.0.0",
		allow: []string{"9.2.0.0", "9.2.1.0", "10.0.0.0"}, deny: []string{"9.1.0.0", "9.1.99.99"}},

	{meaning: "empty is always compatible", expr: "", allow: []string{"9.0.0.0", "1"}},
	{meaning: "blank is always compatible", expr: " ", allow: []string{"9.0.0.0"}},
}

var syntaxBInvalid = []invalidRow{
	{meaning: "there is no OR", expr: ">=9.0.0.0 || <8.0.0.0", reason: "no OR"},
	{meaning: "there is no grouping", expr: "(>=9.0.0.0)", reason: "no grouping"},
	{meaning: "== is not accepted", expr: "==9.0.0.0", reason: "does not accept =="},
	{meaning: "whitespace is not AND", expr: ">9.0.0.0 <9.1.0.0", reason: "commas"},
	{meaning: "&& is not AND", expr: ">9.0.0.0 && <9.1.0.0", reason: "AND is a comma"},
	{meaning: "no wildcards", expr: "9.x", reason: "no wildcards"},
	{meaning: "dangling comma", expr: ">=9.0.0.0,", reason: "malformed constraint"},
	{meaning: "not a version at all", expr: "latest", reason: "malformed constraint"},
	{meaning: "the Syntax A ! operator is not Syntax B", expr: "!9.0.0.0", reason: "malformed constraint"},
}
