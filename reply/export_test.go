package reply

import (
	"context"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
)

// Request is one reply for CommitGroup.
type Request struct {
	TenantID   uuid.UUID
	Consumer   string
	DeliveryID uuid.UUID
	Cmd        envelope.SendCommand
}

// Answer is one reply's outcome from CommitGroup.
type Answer struct {
	Sent *outbox.Sent
	Err  error
}

// CommitGroup runs the group-commit Func on reqs as one group, as a
// flusher would: the whole group's error, or one answer per request.
func (s *Service) CommitGroup(ctx context.Context, reqs []Request) ([]Answer, error) {
	in := make([]request, len(reqs))
	for i, r := range reqs {
		in[i] = request{tenantID: r.TenantID, consumer: r.Consumer, deliveryID: r.DeliveryID, cmd: r.Cmd}
	}
	outs, err := s.commitRequests(ctx, in)
	if err != nil {
		return nil, err
	}
	ans := make([]Answer, len(outs))
	for i, o := range outs {
		ans[i] = Answer{Sent: o.Res, Err: o.Err}
	}
	return ans, nil
}
