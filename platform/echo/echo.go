// Package echo bounds what an error message repeats of a caller's input.
// A message names the parameter that was wrong and shows its value only
// when it is short: a 15 MB sort field echoed whole is a 15 MB answer
// (and log line) the caller chose.
package echo

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxValue is the most of one value a message repeats, in bytes.
const MaxValue = 256

// Quote returns v quoted (%q) when it is at most MaxValue bytes long, and
// otherwise its first bytes quoted, followed by its length.
func Quote(v string) string {
	if len(v) <= MaxValue {
		return strconv.Quote(v)
	}
	return strconv.Quote(prefix(v, MaxValue-32)) + fmt.Sprintf("… (%d bytes)", len(v))
}

// Cut shortens msg to at most max bytes (on a character boundary),
// saying how long it was.
func Cut(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	return prefix(msg, max) + fmt.Sprintf("… (message cut: %d bytes)", len(msg))
}

// prefix is v's longest prefix of at most n bytes that ends on a
// character boundary.
func prefix(v string, n int) string {
	if len(v) <= n {
		return v
	}
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n]
}
