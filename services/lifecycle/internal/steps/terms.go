package steps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Terms are what an administrator accepts of a version (api.md
// "accepted"): its EULA, its signature set and its access grants. An
// upgrade to a version whose terms differ from those accepted is refused
// unless its request accepts the new ones (docs/decisions.md, "Overrides
// and acceptance").
type Terms struct {
	// EULA fingerprints the bundle's EULA: the files at its root whose
	// name starts with "eula" or "license" (any case); "" when none.
	EULA string
	// Signers is the signature set: the trusted keys whose signature of
	// the bundle's digest verifies (empty without keys).
	Signers []string
	// Grants are the access grants the version renders.
	Grants map[string]any
}

// What an upgrade may have to accept, by the name of its accepted field.
const (
	AcceptEULA         = "eula"
	AcceptSignatures   = "signatures"
	AcceptAccessGrants = "accessGrants"
)

// EULAOf fingerprints b's EULA files.
func EULAOf(b *bundle.Bundle) string {
	h := sha256.New()
	n := 0
	for _, f := range b.Files {
		name := strings.ToLower(f.Path)
		eula := strings.HasPrefix(name, "eula") || strings.HasPrefix(name, "license")
		if strings.Contains(name, "/") || !eula {
			continue
		}
		_, _ = fmt.Fprintf(h, "%s\x00%d\x00", f.Path, len(f.Content))
		h.Write(f.Content)
		n++
	}
	if n == 0 {
		return ""
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// TermsOf reads b's terms, rendering its access grants for svc (at b's
// version).
func TermsOf(ctx context.Context, rp RenderPorts, signers func(*bundle.Bundle) []string, svc *lifecycle.Service, b *bundle.Bundle) (Terms, error) {
	t := Terms{EULA: EULAOf(b)}
	if signers != nil {
		t.Signers = signers(b)
	}
	grants, err := AccessGrants(ctx, rp, svc, b, lifecycle.RenderInput{})
	if err != nil {
		return t, fmt.Errorf("render the access grants of version %s: %w", svc.Version, err)
	}
	t.Grants = grants
	return t, nil
}

// GrantValue is one value of an access grant.
type GrantValue struct{ Category, Key, Value string }

func (g GrantValue) String() string { return g.Category + " " + g.Key + " " + g.Value }

// Acceptance is what an upgrade must accept: the fields (Required) and,
// for the grants, the new set and how it differs from the accepted one.
type Acceptance struct {
	Required       []string
	Grants         map[string]any
	Added, Removed []GrantValue
}

// CompareTerms says what moving from the installed version (old, whose
// grants the administrator accepted as accepted) to next must accept.
func CompareTerms(old Terms, accepted lifecycle.Accepted, next Terms) Acceptance {
	a := Acceptance{Grants: next.Grants}
	if old.EULA != next.EULA {
		a.Required = append(a.Required, AcceptEULA)
	}
	if !slices.Equal(old.Signers, next.Signers) {
		a.Required = append(a.Required, AcceptSignatures)
	}
	was, now := grantValues(accepted.AccessGrants), grantValues(next.Grants)
	for _, g := range now {
		if !slices.Contains(was, g) {
			a.Added = append(a.Added, g)
		}
	}
	for _, g := range was {
		if !slices.Contains(now, g) {
			a.Removed = append(a.Removed, g)
		}
	}
	if !SameJSON(accepted.AccessGrants, next.Grants) {
		a.Required = append(a.Required, AcceptAccessGrants)
	}
	return a
}

// Check refuses an acceptance that does not cover what is required.
func (a Acceptance) Check(version string, got *lifecycle.Accepted) error {
	var missing []string
	for _, r := range a.Required {
		switch {
		case r == AcceptEULA && (got == nil || !got.EULA):
			missing = append(missing, "its EULA changed: accepted.eula must be true")
		case r == AcceptSignatures && (got == nil || !got.Signatures):
			missing = append(missing, "its signature set changed: accepted.signatures must be true")
		case r == AcceptAccessGrants && (got == nil || !SameJSON(got.AccessGrants, a.Grants)):
			missing = append(missing, fmt.Sprintf("its access grants changed (added: %s; removed: %s): accepted.accessGrants must equal the upgrade plan's accessGrants verbatim",
				joinGrants(a.Added), joinGrants(a.Removed)))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("version %s changes what was accepted, and the upgrade request does not accept it: %s (POST /upgrade-plan shows it; send the upgrade again with accepted): %w",
		version, strings.Join(missing, "; "), lifecycle.ErrNotAccepted)
}

func joinGrants(gs []GrantValue) string {
	if len(gs) == 0 {
		return "none"
	}
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	return strings.Join(out, ", ")
}

// grantValues flattens api.md's AccessGrants (category → key → values),
// sorted.
func grantValues(m map[string]any) []GrantValue {
	var out []GrantValue
	for cat, keys := range m {
		km, _ := keys.(map[string]any)
		for key, vals := range km {
			switch vs := vals.(type) {
			case []any:
				for _, v := range vs {
					out = append(out, GrantValue{cat, key, fmt.Sprint(v)})
				}
			case []string:
				for _, v := range vs {
					out = append(out, GrantValue{cat, key, v})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// SameJSON compares two JSON documents by value (nil is {}).
func SameJSON(a, b map[string]any) bool {
	ja, err1 := CanonicalJSON(a)
	jb, err2 := CanonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// CanonicalJSON is m as JSON with its numbers and nesting normalised: a
// round trip through encoding/json makes every number a float64 and every
// object a map, whose keys it then writes sorted, so two documents that
// are the same JSON compare equal however they were built.
func CanonicalJSON(m map[string]any) ([]byte, error) {
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
