package app

import (
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
