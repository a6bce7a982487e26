package googlechat

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miohq/mio/channels"
)

// Key set formats.
const (
	// formatX509 is a JSON object of key id → PEM certificate (Google's
	// service-account metadata, certs_url).
	formatX509 = "x509"
	// formatJWKS is a JSON Web Key Set (RFC 7517, oidc_certs_url).
	formatJWKS = "jwks"
)

// Key set fetching bounds.
const (
	// keyFetchTimeout bounds one key set fetch.
	keyFetchTimeout = 10 * time.Second
	// maxKeySet bounds the size of a key set answer.
	maxKeySet = 256 << 10
	// defaultKeyMaxAge is how long a key set is used when its answer has
	// no Cache-Control max-age; maxKeyMaxAge caps what it may ask.
	defaultKeyMaxAge = time.Hour
	maxKeyMaxAge     = 24 * time.Hour
	// minKeyBits: smaller RSA keys in a set are ignored (Google's are
	// 2048 bits).
	minKeyBits = 2048
)

// keyCache holds the key sets the accounts' tokens are verified with, by
// format and URL: fetched on first use, used until their Cache-Control max-age, and
// fetched again when a token names a key id the set does not hold, at
// most once per interval per URL (a flood of tokens with made-up key ids
// costs one fetch per interval).
type keyCache struct {
	client   *http.Client
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	sets map[string]*keySet // by format and URL
}

// keySet is one URL's keys. fetchMu serializes fetches: concurrent
// verifications of an unknown key id wait for one fetch.
type keySet struct {
	fetchMu sync.Mutex

	mu        sync.Mutex
	keys      map[string]crypto.PublicKey
	expires   time.Time // when keys should be fetched again
	attempted time.Time // the last fetch, successful or not
	// failed: the last fetch's error (a *channels.TransientError), nil
	// after a success. While the refresh is bounded, an unknown key id is
	// answered with it: the keys could not be read, not the token is bad.
	failed error
}

func newKeyCache(client *http.Client, interval time.Duration) *keyCache {
	return &keyCache{client: client, interval: interval, now: time.Now, sets: map[string]*keySet{}}
}

// errUnknownKey: the key set holds no key of the token's id, even after
// fetching it again.
var errUnknownKey = errors.New("unknown key id")

// key returns the public key kid of the key set at url (format formatX509
// or formatJWKS), fetching the set when it is not cached, has expired or
// lacks kid and was not fetched within the interval.
func (kc *keyCache) key(ctx context.Context, url, format, kid string) (crypto.PublicKey, error) {
	kc.mu.Lock()
	ks := kc.sets[format+" "+url]
	if ks == nil {
		ks = &keySet{}
		kc.sets[format+" "+url] = ks
	}
	kc.mu.Unlock()

	if k, fresh, ok := ks.lookup(kid, kc.now()); ok && fresh {
		return k, nil
	}
	ks.fetchMu.Lock()
	defer ks.fetchMu.Unlock()
	now := kc.now()
	k, fresh, ok := ks.lookup(kid, now)
	switch {
	case ok && fresh:
		return k, nil
	case !ks.due(now, kc.interval):
		// Fetched within the interval: use what is known.
		if ok {
			return k, nil
		}
		ks.mu.Lock()
		failed := ks.failed
		ks.mu.Unlock()
		if failed != nil {
			return nil, failed
		}
		return nil, errUnknownKey
	}
	keys, maxAge, err := kc.fetch(ctx, url, format)
	if err != nil {
		err = &channels.TransientError{Err: err}
	}
	ks.mu.Lock()
	ks.attempted = kc.now()
	ks.failed = err
	if err == nil {
		ks.keys, ks.expires = keys, ks.attempted.Add(maxAge)
	}
	ks.mu.Unlock()
	if k, _, ok := ks.lookup(kid, now); ok {
		// A stale key is still used when the set could not be fetched.
		return k, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, errUnknownKey
}

// lookup returns kid's key, whether the set is still fresh, and whether
// the key is known.
func (ks *keySet) lookup(kid string, now time.Time) (crypto.PublicKey, bool, bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	k, ok := ks.keys[kid]
	return k, now.Before(ks.expires), ok
}

// due reports whether the set may be fetched now: never fetched, or last
// fetched at least interval ago.
func (ks *keySet) due(now time.Time, interval time.Duration) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.attempted.IsZero() || now.Sub(ks.attempted) >= interval
}

// fetch GETs a key set and parses it.
func (kc *keyCache) fetch(ctx context.Context, url, format string) (map[string]crypto.PublicKey, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, keyFetchTimeout)
	defer cancel()
	resp, err := channels.CallAPI(ctx, kc.client, channels.APIRequest{
		Op: "google_chat: fetch keys", Method: http.MethodGet, URL: url, MaxAnswer: maxKeySet,
		Header: http.Header{"Accept": {channels.MediaTypeJSON}},
	})
	if err != nil {
		return nil, 0, err
	}
	if resp.Status != http.StatusOK {
		return nil, 0, fmt.Errorf("google_chat: fetch keys: HTTP %d", resp.Status)
	}
	var keys map[string]crypto.PublicKey
	if format == formatJWKS {
		keys, err = parseJWKS(resp.Body)
	} else {
		keys, err = parseX509Set(resp.Body)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("google_chat: fetch keys: %w", err)
	}
	return keys, maxAge(resp.Header.Get("Cache-Control")), nil
}

// maxAge reads Cache-Control's max-age, bounded; defaultKeyMaxAge when
// absent.
func maxAge(cc string) time.Duration {
	for _, d := range strings.Split(cc, ",") {
		v, ok := strings.CutPrefix(strings.TrimSpace(strings.ToLower(d)), "max-age=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.Trim(v, `"`))
		if err != nil || n < 0 {
			break
		}
		return min(time.Duration(n)*time.Second, maxKeyMaxAge)
	}
	return defaultKeyMaxAge
}

// parseX509Set reads {"kid": "-----BEGIN CERTIFICATE-----…"}: the RSA
// keys of the certificates. Validity dates are not checked: Google rotates
// the set and the set is what vouches for the keys.
func parseX509Set(body []byte) (map[string]crypto.PublicKey, error) {
	var certs map[string]string
	if err := json.Unmarshal(body, &certs); err != nil {
		return nil, fmt.Errorf("not a JSON object of certificates")
	}
	keys := map[string]crypto.PublicKey{}
	for kid, p := range certs {
		block, _ := pem.Decode([]byte(p))
		if block == nil || block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			continue
		}
		if k, ok := cert.PublicKey.(*rsa.PublicKey); ok && k.N.BitLen() >= minKeyBits {
			keys[kid] = k
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no RSA certificate in the set")
	}
	return keys, nil
}

// parseJWKS reads a JSON Web Key Set's RSA signing keys.
func parseJWKS(body []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set")
	}
	keys := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		n, errN := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.N, "="))
		e, errE := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.E, "="))
		if errN != nil || errE != nil || len(e) == 0 || len(e) > 4 {
			continue
		}
		exp := new(big.Int).SetBytes(e)
		if !exp.IsInt64() || exp.Int64() < 3 {
			continue
		}
		mod := new(big.Int).SetBytes(n)
		if mod.BitLen() < minKeyBits {
			continue
		}
		keys[k.Kid] = &rsa.PublicKey{N: mod, E: int(exp.Int64())}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no RSA signing key in the set")
	}
	return keys, nil
}
