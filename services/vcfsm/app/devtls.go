package app

import (
	"log/slog"
	"path/filepath"

	"github.com/vcfsm/vcfsm/platform/cli"
)

// useDevTLS points the gateway's HTTPS and the services' mTLS at the
// development CA and certificate in <data-dir>/tls, creating them on first
// start.
func useDevTLS(cfg *Config, log *slog.Logger) error {
	dir := filepath.Join(cfg.Lifecycle.DataDir, "tls")
	files, created, err := cli.EnsureDevTLS(dir)
	if err != nil {
		return err
	}
	cfg.Common.GRPCTLS = cli.GRPCTLS{Cert: files.Cert, Key: files.Key, CA: files.CA}
	cfg.Gateway.TLSCert, cfg.Gateway.TLSKey = files.Cert, files.Key
	if created {
		log.Info("--dev-tls: generated a development CA and certificate", "dir", dir, "use", "curl --cacert "+files.CA)
	}
	return nil
}
