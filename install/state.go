package install

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
)

// A state is base64url(version | tenant id | install id | expiry) "."
// base64url(HMAC-SHA256 of those bytes), under a key derived from the
// master key for this purpose alone. The tenant id tells the callback
// which tenant's pending installs to read (row-level security); the
// install id names the row; the expiry refuses an old state before the
// database is asked.
const (
	stateVersion = 1
	statePayload = 1 + 16 + 16 + 8
)

// ErrState is a callback whose state MIO did not sign, has expired, or
// was used already (or whose install was never begun for that channel).
var ErrState = errors.New("install: the state is invalid, expired or used")

// signer signs and checks states.
type signer struct{ key []byte }

func (s signer) sign(tenantID, id uuid.UUID, expires time.Time) string {
	p := make([]byte, statePayload)
	p[0] = stateVersion
	copy(p[1:17], tenantID[:])
	copy(p[17:33], id[:])
	binary.BigEndian.PutUint64(p[33:], uint64(expires.Unix()))
	return base64.RawURLEncoding.EncodeToString(p) + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s signer) mac(p []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(p)
	return m.Sum(nil)
}

// verify checks state's signature and expiry and returns its tenant and
// install ids; every failure is ErrState.
func (s signer) verify(state string, now time.Time) (tenantID, id uuid.UUID, err error) {
	if len(state) > 256 {
		return uuid.Nil, uuid.Nil, ErrState
	}
	body, sig, ok := strings.Cut(state, ".")
	if !ok {
		return uuid.Nil, uuid.Nil, ErrState
	}
	p, err1 := base64.RawURLEncoding.DecodeString(body)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || len(p) != statePayload || p[0] != stateVersion || !hmac.Equal(mac, s.mac(p)) {
		return uuid.Nil, uuid.Nil, ErrState
	}
	if !now.Before(time.Unix(int64(binary.BigEndian.Uint64(p[33:])), 0)) {
		return uuid.Nil, uuid.Nil, ErrState
	}
	copy(tenantID[:], p[1:17])
	copy(id[:], p[17:33])
	return tenantID, id, nil
}
