package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamMismatchError reports an existing stream whose settings cannot
// carry the bridge's events exactly once. MIO does not change a stream it
// did not create: fix the stream or point MIO_NATS_STREAM elsewhere.
type StreamMismatchError struct {
	Stream   string
	Problems []string
}

func (e *StreamMismatchError) Error() string {
	return fmt.Sprintf("nats: stream %s exists with other settings: %s (MIO uses an existing stream as is; change it or set MIO_NATS_STREAM)",
		e.Stream, strings.Join(e.Problems, "; "))
}

// StreamSubjects are the subjects of the stream MIO creates: every event
// subject under mio., and not mio.outbound_cmd.> (a stream capturing the
// commands would store them and answer their requests with its own acks).
var StreamSubjects = []string{SubjectInbound + ".>", SubjectInboundEnriched + ".>", SubjectOutbound + ".>", SubjectOutboundStatus + ".>"}

// StreamConfig is the stream MIO creates when it does not exist: the
// StreamSubjects, file storage, the given duplicate window.
func StreamConfig(name string, duplicates time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        name,
		Description: "MIO events (docs/nats.md)",
		Subjects:    slices.Clone(StreamSubjects),
		Storage:     jetstream.FileStorage,
		Duplicates:  duplicates,
	}
}

// EnsureStream creates the stream when it does not exist, and checks an
// existing one: its subjects must take mio.inbound.…, mio.inbound_enriched.…,
// mio.outbound.… and mio.outbound_status.…, not mio.outbound_cmd.…
// (request-reply, not stored), and its duplicate window must be at least
// duplicates (the bridge's republish after a crash relies on it).
func EnsureStream(ctx context.Context, js jetstream.JetStream, name string, duplicates time.Duration) error {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, StreamConfig(name, duplicates))
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("nats: create stream %s: %w", name, err)
		}
		if err == nil {
			return nil
		}
		s, err = js.Stream(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("nats: stream %s: %w", name, err)
	}
	return checkStream(s.CachedInfo().Config, duplicates)
}

func checkStream(c jetstream.StreamConfig, duplicates time.Duration) error {
	var problems []string
	for _, root := range []string{SubjectInbound, SubjectInboundEnriched, SubjectOutbound, SubjectOutboundStatus} {
		probe := root + ".x.x.x.x"
		if !slices.ContainsFunc(c.Subjects, func(f string) bool { return subjectMatches(f, probe) }) {
			problems = append(problems, fmt.Sprintf("subjects %v do not take %s.>", c.Subjects, root))
		}
	}
	probe := SubjectOutboundCmd + ".x"
	if slices.ContainsFunc(c.Subjects, func(f string) bool { return subjectMatches(f, probe) }) {
		problems = append(problems, fmt.Sprintf("subjects %v take %s.> (commands would be stored and acknowledged by the stream)", c.Subjects, SubjectOutboundCmd))
	}
	if c.Duplicates < duplicates {
		problems = append(problems, fmt.Sprintf("duplicate window %s is shorter than MIO_NATS_DUPLICATE_WINDOW %s", c.Duplicates, duplicates))
	}
	if len(problems) > 0 {
		return &StreamMismatchError{Stream: c.Name, Problems: problems}
	}
	return nil
}

// subjectMatches reports whether the subject filter f (with * and >
// wildcards) matches the literal subject s.
func subjectMatches(f, s string) bool {
	ft, st := strings.Split(f, "."), strings.Split(s, ".")
	for i, t := range ft {
		if t == ">" {
			return len(st) > i
		}
		if i >= len(st) || (t != "*" && t != st[i]) {
			return false
		}
	}
	return len(ft) == len(st)
}
