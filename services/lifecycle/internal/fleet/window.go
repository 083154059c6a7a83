package fleet

import (
	"fmt"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// ValidateWindow checks a maintenance window; where names the field.
func ValidateWindow(w *lifecycle.MaintenanceWindow, where string) error {
	if w == nil {
		return nil
	}
	if _, err := time.LoadLocation(w.TimeZone); err != nil || w.TimeZone == "" {
		return invalid("%s.timeZone %q: want an IANA time zone such as Europe/Berlin or UTC", where, w.TimeZone)
	}
	if _, err := time.Parse("15:04", w.Start); err != nil {
		return invalid("%s.start %q: want a time of day as HH:MM", where, w.Start)
	}
	if w.Duration <= 0 || w.Duration > 7*24*time.Hour {
		return invalid("%s.duration %s: want more than 0 and at most a week", where, w.Duration)
	}
	for _, d := range w.Days {
		if _, ok := weekdays[strings.ToLower(d)]; !ok {
			return invalid("%s.days: %q is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)", where, d)
		}
	}
	return nil
}

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
		if weekdays[strings.ToLower(s)] == d {
			return true
		}
	}
	return false
}
