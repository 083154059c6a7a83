// Package safe contains panics: a panic in one operation step, one
// reconcile or one handler becomes an error of that unit of work, with
// the stack in the log, and the process keeps serving.
package safe

import (
	"fmt"
	"log/slog"
	"runtime/debug"
)

// PanicError is a recovered panic.
type PanicError struct {
	// Where names the unit of work that panicked.
	Where string
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic in %s: %v", e.Where, e.Value)
}

// Call runs fn and returns its error, or a *PanicError when it panics; the
// panic and its stack are logged at error level.
func Call(log *slog.Logger, where string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pe := &PanicError{Where: where, Value: r, Stack: debug.Stack()}
			if log != nil {
				log.Error("recovered panic", "in", where, "panic", fmt.Sprint(r), "stack", string(pe.Stack))
			}
			err = pe
		}
	}()
	return fn()
}
