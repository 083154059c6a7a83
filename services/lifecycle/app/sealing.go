package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage"
)

// loadKeyring reads --encryption-key-file, or the development key in the
// data directory (created on first start). Its first key seals value
// layers and resources at rest; every key opens them.
func loadKeyring(cfg Config, log *slog.Logger) (*seal.Keyring, error) {
	file := cfg.EncryptionKeyFile
	if file == "" {
		path, created, err := seal.EnsureDevKey(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("development encryption key: %w", err)
		}
		if created {
			log.Info("no --encryption-key-file configured: generated a development key sealing secrets at rest", "file", path)
		}
		file = path
	}
	keys, err := seal.LoadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--encryption-key-file: %w", err)
	}
	return keys, nil
}

// resealMetrics say how the re-seal of a start went: operators rotating a
// key remove the old one once vcfsm_lifecycle_reseal_done is 1 on every
// replica.
type resealMetrics struct {
	done     prometheus.Gauge
	resealed prometheus.Counter
}

func newResealMetrics(tel *observability.Telemetry) resealMetrics {
	m := resealMetrics{
		done: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: observability.Namespace, Name: "lifecycle_reseal_done",
			Help: "1 once every record at rest is sealed by the first key of the keyring (the start's re-seal pass finished), else 0."}),
		resealed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: observability.Namespace, Name: "lifecycle_resealed_records_total",
			Help: "Records at rest re-sealed with the first key (sealing turned on, or a key rotation)."}),
	}
	tel.MustRegister(m.done, m.resealed)
	return m
}

// reseal seals with the first key every record not sealed by it (sealing
// just turned on, or a key rotation), while the service serves: until it
// is done the older keys open what it has not reached. A failure is
// logged; the next start tries again.
func reseal(ctx context.Context, repo *storage.Repo, keys *seal.Keyring, m resealMetrics, log *slog.Logger) {
	n, err := repo.Reseal(ctx)
	m.resealed.Add(float64(n))
	switch {
	case err != nil && ctx.Err() == nil:
		log.Error("re-sealing records at rest with the first key failed; the next start tries again", "key", keys.Primary(), "resealed", n, "error", err)
	case err == nil:
		m.done.Set(1)
		if n > 0 {
			log.Info("re-sealed records at rest with the first key", "key", keys.Primary(), "count", n)
		}
	}
}
