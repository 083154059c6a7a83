package lifecycle

import "errors"

func asBlocked(err error, target **blockedError) bool { return errors.As(err, target) }
