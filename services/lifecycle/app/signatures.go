package app

import (
	"slices"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/signature"
)

// trustedKeys are the bundle signing keys of --signature-keys.
type trustedKeys struct {
	*signature.Verifier
}

func loadSignatureKeys(list string) (trustedKeys, error) {
	var files []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			files = append(files, f)
		}
	}
	v, err := signature.LoadKeys(files)
	return trustedKeys{v}, err
}

// check is the activation's signature gate: none without keys.
func (k trustedKeys) check() func(*bundle.Bundle) error {
	if !k.Configured() {
		return nil
	}
	return k.Check
}

// set is a bundle's signature set: the trusted keys whose signature of its
// digest verifies. Without keys no signer can be named: the set is empty
// (and with keys, a version no key verifies is refused before its set
// matters).
func (k trustedKeys) set(b *bundle.Bundle) []string {
	var out []string
	for _, r := range k.Verify(b) {
		if r.Verified && !slices.Contains(out, r.Signer) {
			out = append(out, r.Signer)
		}
	}
	slices.Sort(out)
	return out
}
