package teams

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miohq/mio/channels"
)

// Key discovery defaults.
const (
	// DefaultKeyRefreshInterval bounds the fetches a token naming an
	// unknown kid causes: at most one per metadata URL in this time, so
	// forged kids cannot make MIO hammer the discovery endpoint.
	DefaultKeyRefreshInterval = time.Minute
	// DefaultKeyMaxAge is how long keys are used before they are fetched
	// again (Microsoft rolls them over with days of overlap).
	DefaultKeyMaxAge = 24 * time.Hour
	// maxDiscoveryAnswer bounds the metadata and key documents.
	maxDiscoveryAnswer = 256 << 10
)

// signingKey is one key of the Bot Framework's key set: the RSA public
// key and the channels it is endorsed for.
type signingKey struct {
	pub          *rsa.PublicKey
	endorsements []string
}

func (k signingKey) endorses(channelID string) bool {
	for _, e := range k.endorsements {
		if e == channelID {
			return true
		}
	}
	return false
}

// keySet is the keys fetched from one metadata URL.
type keySet struct {
	keys    map[string]signingKey
	fetched time.Time // zero: never fetched successfully
	tried   time.Time // last fetch attempt
	// failed: the last fetch's error (a *channels.TransientError), nil
	// after a success. While the refresh is bounded, an unknown kid is
	// answered with it: the keys could not be read, not the token is bad.
	failed error
}

// keyCache holds the signing keys per OpenID metadata URL, shared by the
// accounts of a channel. A set is fetched on first use, after maxAge,
// and again for an unknown kid at most once per refresh interval.
type keyCache struct {
	client  *http.Client
	refresh time.Duration
	maxAge  time.Duration
	now     func() time.Time

	mu   sync.Mutex // held across a fetch: one fetch at a time
	sets map[string]*keySet
}

func newKeyCache(client *http.Client, refresh, maxAge time.Duration) *keyCache {
	return &keyCache{client: client, refresh: refresh, maxAge: maxAge, now: time.Now, sets: map[string]*keySet{}}
}

// errUnknownKey: no key of the set has the token's kid, even after a
// refresh.
var errUnknownKey = errors.New("unknown signing key")

// key returns the key kid of the set named by metadataURL.
func (kc *keyCache) key(ctx context.Context, metadataURL, kid string) (signingKey, error) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	set := kc.sets[metadataURL]
	if set == nil {
		set = &keySet{}
		kc.sets[metadataURL] = set
	}
	now := kc.now()
	if k, ok := set.keys[kid]; ok && now.Sub(set.fetched) < kc.maxAge {
		return k, nil
	}
	if !set.tried.IsZero() && now.Sub(set.tried) < kc.refresh {
		if k, ok := set.keys[kid]; ok { // stale but the refresh is bounded
			return k, nil
		}
		if set.failed != nil {
			return signingKey{}, set.failed
		}
		return signingKey{}, errUnknownKey
	}
	set.tried = now
	keys, err := kc.fetch(ctx, metadataURL)
	if err != nil {
		set.failed = &channels.TransientError{Err: err}
		if k, ok := set.keys[kid]; ok {
			return k, nil // keep using a known key while discovery fails
		}
		return signingKey{}, set.failed
	}
	set.keys, set.fetched, set.failed = keys, now, nil
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return signingKey{}, errUnknownKey
}

// fetch reads the metadata document's jwks_uri and the RSA keys it lists.
func (kc *keyCache) fetch(ctx context.Context, metadataURL string) (map[string]signingKey, error) {
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := kc.getJSON(ctx, "teams: openid metadata", metadataURL, &meta); err != nil {
		return nil, err
	}
	if !channels.IsHTTPURL(meta.JWKSURI) {
		return nil, errors.New("teams: openid metadata: no jwks_uri")
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := kc.getJSON(ctx, "teams: signing keys", meta.JWKSURI, &set); err != nil {
		return nil, err
	}
	keys := make(map[string]signingKey, len(set.Keys))
	for _, raw := range set.Keys {
		var jwk jose.JSONWebKey
		if jwk.UnmarshalJSON(raw) != nil || jwk.KeyID == "" {
			continue // a key of another type or shape: not one of ours
		}
		pub, ok := jwk.Key.(*rsa.PublicKey)
		if !ok {
			continue
		}
		var extra struct {
			Endorsements []string `json:"endorsements"`
		}
		_ = json.Unmarshal(raw, &extra) // decoded above: valid JSON
		keys[jwk.KeyID] = signingKey{pub: pub, endorsements: extra.Endorsements}
	}
	if len(keys) == 0 {
		return nil, errors.New("teams: signing keys: no RSA key")
	}
	return keys, nil
}

func (kc *keyCache) getJSON(ctx context.Context, op, u string, v any) error {
	resp, err := channels.CallAPI(ctx, kc.client, channels.APIRequest{Op: op, Method: http.MethodGet, URL: u, MaxAnswer: maxDiscoveryAnswer})
	if err != nil {
		return err
	}
	if resp.Status != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", op, resp.Status)
	}
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}
