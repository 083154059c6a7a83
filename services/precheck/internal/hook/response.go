package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Severities a hook may answer with; anything else is dropped (seed 000).
const (
	SeverityError   = "ERROR"
	SeverityWarning = "WARNING"
	SeverityInfo    = "INFO"
)

// item is one kept result of a hook.
type item struct {
	severity string // upper case
	message  string
}

// wireItem is one element of the response's results array. Pointers tell
// a missing field from an empty one.
type wireItem struct {
	Severity *string `json:"severity"`
	Message  *string `json:"message"`
}

// parseResults reads a 200 answer: {"results":[{"severity","message"}]}.
// Items with a severity other than ERROR, WARNING or INFO (any case) are
// dropped; a body that is not JSON or does not have this shape is an
// error, as is any trailing data after the object.
func parseResults(body []byte) ([]item, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var root map[string]json.RawMessage
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w (body starts with %q)", err, snippet(body))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON object (body starts with %q)", snippet(body))
	}
	raw, ok := root["results"]
	if !ok {
		return nil, errors.New(`missing the top-level "results" array`)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || elems == nil {
		return nil, fmt.Errorf(`"results" must be an array, got %s`, snippet(raw))
	}
	var out []item
	for i, e := range elems {
		var w wireItem
		if err := json.Unmarshal(e, &w); err != nil {
			return nil, fmt.Errorf("results[%d]: want an object with string fields severity and message, got %s", i, snippet(e))
		}
		if w.Severity == nil {
			return nil, fmt.Errorf("results[%d]: missing severity", i)
		}
		if w.Message == nil {
			return nil, fmt.Errorf("results[%d]: missing message", i)
		}
		sev := strings.ToUpper(*w.Severity)
		switch sev {
		case SeverityError, SeverityWarning, SeverityInfo:
			out = append(out, item{severity: sev, message: *w.Message})
		}
	}
	return out, nil
}

// snippet is the start of b for an error message.
func snippet(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
