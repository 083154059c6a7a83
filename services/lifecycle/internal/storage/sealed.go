package storage

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Every copy of a value that can hold a secret is sealed at rest: the
// value layers of a service (its own, and those of the version an upgrade
// replaced, kept for a rollback) and every resource's rendered document
// (sealing.go). The rest of a service record (name, status, labels…) stays
// readable JSON, so the store can be inspected and filtered without keys.

// storedService is a service as stored: its value layers as a sealed
// envelope (or plain JSON when no keys are configured, or from before
// sealing). The outer fields shadow the embedded service's own in JSON.
type storedService struct {
	*lifecycle.Service
	Values          json.RawMessage `json:"values"`
	PreviousVersion *storedVersion  `json:"previousVersion,omitempty"`
}

type storedVersion struct {
	*lifecycle.VersionRef
	Values json.RawMessage `json:"values"`
}

// sealedValues is the value layers of record key, sealed with the primary
// key (the plain JSON when keys is nil).
func sealedValues(keys *seal.Keyring, key string, v lifecycle.OverlayValues) (json.RawMessage, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if keys == nil {
		return plain, nil
	}
	out, err := keys.Seal(plain, []byte(key))
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", key, err)
	}
	return out, nil
}

// openValues reads value layers stored by sealedValues (or plain), and
// says which key sealed them ("" for plain ones).
func openValues(keys *seal.Keyring, key string, raw json.RawMessage) (lifecycle.OverlayValues, string, error) {
	var v lifecycle.OverlayValues
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return v, "", nil
	}
	plain, id, err := openRecord(keys, store.Record{Key: key, Value: raw})
	if err != nil {
		return v, id, err
	}
	if err := json.Unmarshal(plain, &v); err != nil {
		return v, id, fmt.Errorf("decode %s: %w", key, err)
	}
	return v, id, nil
}

// The record keys the value layers are sealed to (AES-GCM's additional
// data): a sealed envelope moved to another service, or between the two
// fields, does not open.
func valuesKey(id string) string   { return id + "|values" }
func previousKey(id string) string { return id + "|previousVersion.values" }

func encodeService(keys *seal.Keyring, svc *lifecycle.Service) ([]byte, error) {
	st := storedService{Service: svc}
	var err error
	if st.Values, err = sealedValues(keys, valuesKey(svc.ID), svc.Values); err != nil {
		return nil, err
	}
	if svc.PreviousVersion != nil {
		st.PreviousVersion = &storedVersion{VersionRef: svc.PreviousVersion}
		if st.PreviousVersion.Values, err = sealedValues(keys, previousKey(svc.ID), svc.PreviousVersion.Values); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode service %s: %w", svc.ID, err)
	}
	return raw, nil
}

func decodeService(keys *seal.Keyring, rec store.Record) (*lifecycle.Service, error) {
	svc, _, err := decodeSealedService(keys, rec)
	return svc, err
}

// decodeSealedService decodes a service record and says which keys sealed
// its value layers ("" for plain ones).
func decodeSealedService(keys *seal.Keyring, rec store.Record) (*lifecycle.Service, []string, error) {
	var svc lifecycle.Service
	st := storedService{Service: &svc}
	if err := json.Unmarshal(rec.Value, &st); err != nil {
		return nil, nil, fmt.Errorf("decode service %s: %w", rec.Key, err)
	}
	var sealedBy []string
	v, id, err := openValues(keys, valuesKey(svc.ID), st.Values)
	if err != nil {
		return nil, nil, fmt.Errorf("service %s: %w", rec.Key, err)
	}
	svc.Values, sealedBy = v, append(sealedBy, id)
	if st.PreviousVersion != nil && st.PreviousVersion.VersionRef != nil {
		v, id, err := openValues(keys, previousKey(svc.ID), st.PreviousVersion.Values)
		if err != nil {
			return nil, nil, fmt.Errorf("service %s: %w", rec.Key, err)
		}
		prev := *st.PreviousVersion.VersionRef
		prev.Values = v
		svc.PreviousVersion, sealedBy = &prev, append(sealedBy, id)
	}
	svc.Revision = rec.Revision
	return &svc, sealedBy, nil
}
