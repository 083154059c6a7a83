package logging_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/vcfsm/vcfsm/platform/logging"
)

// zap records (the etcd client's) come out in the process's slog format,
// with their fields, at and above the bridge's level.
func TestZapBridge(t *testing.T) {
	var buf bytes.Buffer
	log, err := logging.New(&buf, "json", "debug")
	require.NoError(t, err)
	z := logging.Zap(log, zap.WarnLevel).Named("etcd-client").With(zap.String("endpoint", "http://127.0.0.1:2379"))
	z.Info("dropped below the bridge level")
	z.Warn("retrying", zap.Int("attempt", 3), zap.Duration("backoff", 25_000_000))
	z.Error("gave up", zap.Error(errBoom{}))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, buf.String())
	var warn, fail map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &warn))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &fail))
	require.Equal(t, "WARN", warn["level"])
	require.Equal(t, "retrying", warn["msg"])
	require.Equal(t, "etcd-client", warn["logger"])
	require.Equal(t, "http://127.0.0.1:2379", warn["endpoint"])
	require.EqualValues(t, 3, warn["attempt"])
	require.Equal(t, "ERROR", fail["level"])
	require.Equal(t, "boom", fail["error"])
}

type errBoom struct{}

func (errBoom) Error() string { return "boom" }
