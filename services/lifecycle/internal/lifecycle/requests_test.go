package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Noting the same results again (a step run again after a restart) adds
// nothing twice.
func TestAddDetailsOnce(t *testing.T) {
	w := ErrorDetail{Type: ErrTypeInstall, Severity: SeverityWarn, Message: "disk"}
	i := ErrorDetail{Type: ErrTypeInstall, Severity: SeverityInfo, Message: "fine"}
	ds := AddDetails(nil, w, i)
	ds = AddDetails(ds, i, w)
	require.Equal(t, []ErrorDetail{w, i}, ds)
}
