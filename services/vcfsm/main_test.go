package vcfsm_test

import (
	"os"
	"testing"

	renderer "github.com/vcfsm/vcfsm/services/renderer/app"
)

// TestMain lets this test binary serve as the renderer's sandbox worker:
// the renderer re-executes its own executable to render in a separate,
// killable process.
func TestMain(m *testing.M) {
	renderer.MaybeRunWorker()
	code := m.Run()
	removeBinaries()
	os.Exit(code)
}
