package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// acceptanceComplete says what is missing for activation.
func acceptanceComplete(a lifecycle.Accepted, want map[string]any) error {
	var missing []string
	if !a.EULA {
		missing = append(missing, "accepted.eula must be true")
	}
	if !a.Signatures {
		missing = append(missing, "accepted.signatures must be true")
	}
	if !sameGrants(a.AccessGrants, want) {
		got, _ := canonicalJSON(a.AccessGrants)
		exp, _ := canonicalJSON(want)
		missing = append(missing, fmt.Sprintf("accepted.accessGrants must equal POST /render-access-grants output verbatim: expected %s, got %s", exp, got))
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(missing, "; "), lifecycle.ErrFailedPrecondition)
	}
	return nil
}

// sameGrants compares access grants as JSON documents.
func sameGrants(a, b map[string]any) bool {
	ja, err1 := canonicalJSON(a)
	jb, err2 := canonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// canonicalJSON is m as JSON with its numbers and nesting normalised: a
// round trip through encoding/json makes every number a float64 and every
// object a map, whose keys it then writes sorted, so two documents that
// are the same JSON compare equal however they were built.
func canonicalJSON(m map[string]any) ([]byte, error) {
	if m == nil {
		m = map[string]any{}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var norm any
	if err := json.Unmarshal(raw, &norm); err != nil {
		return nil, err
	}
	return json.Marshal(norm)
}
