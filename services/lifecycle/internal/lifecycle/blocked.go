package lifecycle

// BlockedError marks a step outcome that must not be retried: the
// operation fails and the service shows why.
type BlockedError struct {
	// ErrType is the errorDetails type the failure is shown as.
	ErrType string
	err     error
	// Details are shown in errorDetails after the failure itself: every
	// result of the check that blocked (errors, warnings and infos).
	Details []ErrorDetail
}

func (b *BlockedError) Error() string { return b.err.Error() }
func (b *BlockedError) Unwrap() error { return b.err }

// Blocked marks err as a final step failure of the given errorDetails type.
func Blocked(errType string, err error) error { return &BlockedError{ErrType: errType, err: err} }

// BlockedWith is Blocked, keeping every result of the check that blocked.
func BlockedWith(errType string, err error, details []ErrorDetail) error {
	return &BlockedError{ErrType: errType, err: err, Details: details}
}
