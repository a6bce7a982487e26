package googlechat

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

// TestFetchMedia: an uploaded attachment is downloaded through the media
// API with the app's token; a resource name that would leave the media
// path, and an account without a key, are permanent failures.
func TestFetchMedia(t *testing.T) {
	t.Parallel()
	f := channelstest.NewFakeGoogle(t, time.Hour)
	f.PutMedia("AATUf-1-resource", []byte("%PDF-1.7"))
	ch := testChannel()
	acct := channels.Account{ExternalID: testProject, Settings: f.Settings("", ""), Credentials: f.Credentials()}
	g, err := ch.Grant(acct)
	require.NoError(t, err)
	acct.Tokens = &grantTokens{g: g}
	client := fetch.NewClient(fetch.Policy{AllowHTTP: true, AllowPrivate: true})
	att := func(ref string) envelope.Attachment {
		return envelope.Attachment{Source: &envelope.AttachmentSource{Ref: ref}}
	}

	got, err := ch.Fetch(context.Background(), acct, att("AATUf-1-resource"), client)
	require.NoError(t, err)
	b, err := io.ReadAll(got.Body)
	require.NoError(t, err)
	require.NoError(t, got.Body.Close())
	require.Equal(t, "%PDF-1.7", string(b))

	for _, ref := range []string{"", "../token", "a/../../v1/spaces", "a//b"} {
		_, err := ch.Fetch(context.Background(), acct, att(ref), client)
		require.Equal(t, "permanent", channelstest.ErrorKind(err), ref)
	}
	_, err = ch.Fetch(context.Background(), acct, att("missing"), client)
	require.Equal(t, "permanent", channelstest.ErrorKind(err), "404")
	acct.Tokens = nil
	_, err = ch.Fetch(context.Background(), acct, att("AATUf-1-resource"), client)
	require.Equal(t, "permanent", channelstest.ErrorKind(err))
}
