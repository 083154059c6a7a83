// Package signature verifies the cosign signatures carried with a bundle
// against the public keys an operator configured (--signature-keys), with
// sigstore's signature library (what cosign uses): the signature must be
// valid over the simple-signing payload, and the payload must name the
// bundle's own digest.
package signature

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigstore "github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// Annotation is the layer annotation holding a cosign signature.
const Annotation = "dev.cosignproject.cosign/signature"

// Key is a trusted public key; Name (its file name without extension)
// says who signed.
type Key struct {
	Name     string
	verifier sigstore.Verifier
}

// Verifier checks signatures against the trusted keys.
type Verifier struct {
	keys []Key
}

// LoadKeys reads PEM public keys (ECDSA, RSA or Ed25519), one per file.
func LoadKeys(files []string) (*Verifier, error) {
	v := &Verifier{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--signature-keys: %w", err)
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(raw)
		if err != nil {
			return nil, fmt.Errorf("--signature-keys: %s: %w", f, err)
		}
		ver, err := sigstore.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("--signature-keys: %s: %w", f, err)
		}
		v.keys = append(v.keys, Key{Name: strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), verifier: ver})
	}
	return v, nil
}

// Configured reports whether any key is trusted.
func (v *Verifier) Configured() bool { return v != nil && len(v.keys) > 0 }

// Result is the verdict on one signature payload.
type Result struct {
	Digest   string
	Tag      string
	Signer   string // the key that verified it; empty when none did
	Verified bool
	Reason   string // why it did not verify
}

// Verify checks every signature payload carried for the bundle's digest.
func (v *Verifier) Verify(b *bundle.Bundle) []Result {
	var out []Result
	for _, s := range b.Signatures {
		if s.Digest != b.Digest {
			continue
		}
		for i, p := range s.Payloads {
			var ann map[string]string
			if i < len(s.Annotations) {
				ann = s.Annotations[i]
			}
			r := Result{Digest: s.Digest, Tag: s.Tag}
			r.Signer, r.Reason = v.verifyOne(b.Digest, p, ann[Annotation])
			r.Verified = r.Signer != ""
			out = append(out, r)
		}
	}
	return out
}

func (v *Verifier) verifyOne(digest string, raw []byte, sigB64 string) (signer, reason string) {
	if !v.Configured() {
		return "", "no --signature-keys configured: the signer is not verified"
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil || len(sig) == 0 {
		return "", "the signature layer carries no " + Annotation + " annotation"
	}
	var matched *Key
	for i := range v.keys {
		if v.keys[i].verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(raw)) == nil {
			matched = &v.keys[i]
			break
		}
	}
	if matched == nil {
		return "", "the signature does not verify with any of the configured keys"
	}
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", "the signed payload is not a cosign simple-signing payload: " + err.Error()
	}
	if got := p.Critical.Image.DockerManifestDigest; got != digest {
		return "", fmt.Sprintf("the signature (by %s) is for %s, not for this bundle %s", matched.Name, got, digest)
	}
	return matched.Name, ""
}

// Check explains why a bundle has no verified signature, or returns nil.
func (v *Verifier) Check(b *bundle.Bundle) error {
	results := v.Verify(b)
	if len(results) == 0 {
		return errors.New("the bundle carries no cosign signature for its digest " + b.Digest)
	}
	var reasons []string
	for _, r := range results {
		if r.Verified {
			return nil
		}
		reasons = append(reasons, r.Reason)
	}
	return errors.New(strings.Join(reasons, "; "))
}
