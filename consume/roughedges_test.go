package consume_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
)

// TestBearerSchemeAnyCase: the Authorization scheme is matched
// case-insensitively (RFC 7235); other schemes and empty credentials
// stay 401.
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name, header string
		status       int
	}{
		{"Bearer", "Bearer " + b.token, 404},
		{"bearer", "bearer " + b.token, 404},
		{"BEARER", "BEARER " + b.token, 404},
		{"bEaReR extra spaces", "bEaReR   " + b.token + " ", 404},
		{"Basic", "Basic " + b.token, 401},
		{"NoCredentials", "bearer ", 401},
		{"SchemeOnly", "bearer", 401},
		{"TokenOnly", b.token, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/consumers/none", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", tc.header)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode)
		})
	}
}

// TestConsumerLimitsZero: an explicit max_deliver or max_ack_pending of 0
// is refused (400, nothing written); omitted, they get the defaults; the
// Go client never sends 0.
func TestConsumerLimitsZero(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, body := range []string{`{"max_deliver":0}`, `{"max_ack_pending":0}`, `{"max_deliver":-1}`} {
		status, out := b.raw(t, "PUT", "/v1/consumers/z", b.token, body)
		require.Equal(t, 400, status, out)
		require.True(t, strings.Contains(out, "max_deliver") || strings.Contains(out, "max_ack_pending"), out)
	}
	_, err := b.client.GetConsumer(ctx, "z")
	require.True(t, client.IsNotFound(err), "nothing written")

	status, out := b.raw(t, "PUT", "/v1/consumers/z", b.token, `{}`)
	require.Equal(t, 201, status, out)
	info, err := b.client.PutConsumer(ctx, "z", client.ConsumerConfig{})
	require.NoError(t, err)
	require.Equal(t, consume.DefaultMaxDeliver, info.MaxDeliver)
	require.Equal(t, consume.DefaultMaxAckPending, info.MaxAckPending)
}

// TestDeliveryIDTagged: lease-range delivery ids carry a tag: not the
// database's sequential form, different per consumer for the same range,
// and a settle with a wrong tag, or with the untagged form, settles
// nothing while the right id still does.
func TestDeliveryIDTagged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.PutConsumer(ctx, "g", client.ConsumerConfig{})
	require.NoError(t, err)
	b.insert(t, b.tenant, b.account, "conv", "m0", "m1", "m2")
	ds, err := b.client.Pull(ctx, "g", 10, 5*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 3)
	seenTails := map[[8]byte]bool{}
	for i, d := range ds {
		lease, idx, ok := consume.ParseDeliveryID(d.DeliveryID)
		require.True(t, ok)
		require.Equal(t, i, idx)
		require.NotEqual(t, db.LeaseDeliveryID(lease, idx), d.DeliveryID, "not the guessable form")
		_, _, untagged := db.ParseLeaseDeliveryID(d.DeliveryID)
		require.False(t, untagged)
		seenTails[[8]byte(d.DeliveryID[8:])] = true
	}
	require.Len(t, seenTails, 3, "a tag per member")

	lease, idx, _ := consume.ParseDeliveryID(ds[0].DeliveryID)
	forged := ds[0].DeliveryID
	forged[15] ^= 1
	guessed := ds[1].DeliveryID
	guessed[7]++ // member 2 with member 1's tag
	res, err := b.client.Ack(ctx, "g", forged, db.LeaseDeliveryID(lease, idx), guessed, uuid.New())
	require.NoError(t, err)
	for i, r := range res {
		require.False(t, r.OK, "id %d must not settle", i)
	}
	require.Equal(t, forged, res[0].DeliveryID, "results name the ids as sent")
	info, err := b.client.GetConsumer(ctx, "g")
	require.NoError(t, err)
	require.Equal(t, int64(3), info.Stats.AckPending, "nothing settled")

	res, err = b.client.Ack(ctx, "g", deliveryIDs(ds)...)
	require.NoError(t, err)
	for _, r := range res {
		require.True(t, r.OK)
	}
	// nak, term and extend check the tag too.
	b.insert(t, b.tenant, b.account, "conv", "m3")
	ds, err = b.client.Pull(ctx, "g", 10, 5*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	bad := ds[0].DeliveryID
	bad[9] ^= 0x10
	res, err = b.client.Extend(ctx, "g", bad)
	require.NoError(t, err)
	require.False(t, res[0].OK)
	res, err = b.client.Extend(ctx, "g", ds[0].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)
	res, err = b.client.Ack(ctx, "g", ds[0].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK, "a member moved out of its range keeps its tagged id")
}
