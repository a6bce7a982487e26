package httpapi

import (
	"encoding/json"
	"errors"
	"time"
)

// Duration is a time.Duration in JSON as a Go duration string ("30s").
type Duration time.Duration

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`durations are strings in Go syntax, e.g. "30s"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New(`bad duration ` + string(b) + `: want Go syntax, e.g. "30s" or "250ms"`)
	}
	*d = Duration(v)
	return nil
}
