package fleet

import (
	"fmt"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Open reports whether the window is open at now and, when it is not,
// when it next opens. A nil window is always open.
func Open(w *lifecycle.MaintenanceWindow, now time.Time) (bool, time.Time, error) {
	if w == nil {
		return true, time.Time{}, nil
	}
	loc, err := time.LoadLocation(w.TimeZone)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("maintenance window: time zone %q: %w", w.TimeZone, err)
	}
	start, err := time.Parse("15:04", w.Start)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("maintenance window: start %q: %w", w.Start, err)
	}
	local := now.In(loc)
	// A window that opened on one of the last 7 days may still be open;
	// otherwise the first opening in the next 8 days is the next one.
	for day := -7; day <= 8; day++ {
		d := local.AddDate(0, 0, day)
		opens := time.Date(d.Year(), d.Month(), d.Day(), start.Hour(), start.Minute(), 0, 0, loc)
		if !onDay(w, opens.Weekday()) {
			continue
		}
		if !local.Before(opens) && local.Before(opens.Add(w.Duration)) {
			return true, time.Time{}, nil
		}
		if opens.After(local) {
			return false, opens.UTC(), nil
		}
	}
	return false, time.Time{}, fmt.Errorf("maintenance window %v never opens", w.Days)
}

func onDay(w *lifecycle.MaintenanceWindow, d time.Weekday) bool {
	if len(w.Days) == 0 {
		return true
	}
	for _, s := range w.Days {
		if lifecycle.Weekday(s) == d {
			return true
		}
	}
	return false
}
