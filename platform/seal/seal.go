// Package seal encrypts records at rest with AES-256-GCM, as Kubernetes
// encrypts Secrets: a keyring of named keys, the first of which seals; all
// of them open, so keys can be rotated without downtime.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vcfsm/vcfsm/platform/cli"
)

// Algorithm names the envelope format.
const Algorithm = "aes-256-gcm"

// Keyring holds the keys; Primary seals.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

// Parse reads key lines "ID:BASE64" (32 bytes once decoded); blank lines
// and # comments are skipped. The first key seals.
func Parse(text string) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, b64, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(id) == "" {
			return nil, fmt.Errorf("key line %d: want ID:BASE64", n+1)
		}
		id = strings.TrimSpace(id)
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("key %q (line %d): want 32 bytes, base64-encoded", id, n+1)
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("key %q (line %d): listed twice", id, n+1)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[id] = aead
		if k.primary == "" {
			k.primary = id
		}
	}
	if k.primary == "" {
		return nil, errors.New("no key given")
	}
	return k, nil
}

// LoadFile reads a keyring file (mode 0600).
func LoadFile(path string) (*Keyring, error) {
	raw, err := cli.ReadSecretFile(path)
	if err != nil {
		return nil, err
	}
	k, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// DevKeyFile is where EnsureDevKey keeps the development key.
const DevKeyFile = "encryption-key"

// EnsureDevKey returns the keyring file in dir, creating it (mode 0600)
// with one fresh key when absent.
func EnsureDevKey(dir string) (path string, created bool, err error) {
	path = filepath.Join(dir, DevKeyFile)
	if _, err := os.Stat(path); err == nil {
		return path, false, nil
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, err
	}
	text := "# first key seals, every key opens; see SECURITY.md for rotation\ndev-1:" + base64.StdEncoding.EncodeToString(key[:]) + "\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", false, err
	}
	return path, true, nil
}

// Primary is the ID of the sealing key.
func (k *Keyring) Primary() string { return k.primary }

type envelope struct {
	Sealed string `json:"sealed"`
	KeyID  string `json:"keyId"`
	Nonce  []byte `json:"nonce"`
	Data   []byte `json:"data"`
}

// Seal encrypts plain with the primary key, bound to aad (the record's
// key, so a sealed value cannot be moved to another record).
func (k *Keyring) Seal(plain, aad []byte) ([]byte, error) {
	aead := k.aeads[k.primary]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return json.Marshal(envelope{Sealed: Algorithm, KeyID: k.primary, Nonce: nonce, Data: aead.Seal(nil, nonce, plain, aad)})
}

// IsSealed reports whether raw is a sealed envelope.
func IsSealed(raw []byte) bool {
	return bytes.HasPrefix(raw, []byte(`{"sealed":`))
}

// Open decrypts a sealed envelope; keyID tells which key sealed it.
func (k *Keyring) Open(raw, aad []byte) (plain []byte, keyID string, err error) {
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, "", fmt.Errorf("sealed record: %w", err)
	}
	if env.Sealed != Algorithm {
		return nil, "", fmt.Errorf("sealed record: unknown algorithm %q", env.Sealed)
	}
	aead, ok := k.aeads[env.KeyID]
	if !ok {
		return nil, env.KeyID, fmt.Errorf("sealed record: key %q is not in the keyring (was it removed before every record was re-sealed?)", env.KeyID)
	}
	plain, err = aead.Open(nil, env.Nonce, env.Data, aad)
	if err != nil {
		return nil, env.KeyID, fmt.Errorf("sealed record: key %q cannot open it: %w", env.KeyID, err)
	}
	return plain, env.KeyID, nil
}
