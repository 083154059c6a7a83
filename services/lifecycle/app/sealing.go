package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage"
)

// sealSecrets turns on encryption at rest of Secret resources and
// re-seals those not sealed by the first key (encryption just turned on,
// or a key rotation).
func sealSecrets(ctx context.Context, cfg Config, repo *storage.Repo, log *slog.Logger) error {
	file := cfg.EncryptionKeyFile
	if file == "" {
		path, created, err := seal.EnsureDevKey(cfg.DataDir)
		if err != nil {
			return fmt.Errorf("development encryption key: %w", err)
		}
		if created {
			log.Info("no --encryption-key-file configured: generated a development key sealing Secrets at rest", "file", path)
		}
		file = path
	}
	keys, err := seal.LoadFile(file)
	if err != nil {
		return fmt.Errorf("--encryption-key-file: %w", err)
	}
	repo.SealSecrets(keys)
	n, err := repo.Reseal(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		log.Info("re-sealed Secrets at rest with the first key", "key", keys.Primary(), "count", n)
	}
	return nil
}
