// Package secretbox seals and opens small secrets (account credentials,
// webhook secrets) with AES-256-GCM under MIO's master key, so they are
// encrypted at rest in PostgreSQL. A sealed value is
// version(1) || nonce(12) || ciphertext+tag; the additional data binds it to
// its owner (account id and column), so a value copied to another row does
// not open.
//
// Internal to MIO; not a stable API.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

const version = 1

// ErrOpen is returned when a sealed value cannot be opened: wrong key,
// wrong owner, or corrupted data.
var ErrOpen = errors.New("secretbox: cannot open sealed value (wrong MIO_MASTER_KEY?)")

// Box seals and opens values with one key.
type Box struct {
	aead cipher.AEAD
	key  []byte
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secretbox: key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead, key: append([]byte(nil), key...)}, nil
}

// DeriveKey returns a 32-byte key for purpose (HKDF-SHA256 of the master
// key with purpose as its info): a key for another use (signing install
// states) that reveals nothing of the master key or of other purposes'
// keys.
func (b *Box) DeriveKey(purpose string) []byte {
	k, err := hkdf.Key(sha256.New, b.key, nil, "mio/"+purpose, 32)
	if err != nil {
		panic("secretbox: hkdf: " + err.Error()) // only for lengths over 255*32
	}
	return k
}

// Seal encrypts plaintext bound to ad. A nil plaintext seals to nil.
func (b *Box) Seal(plaintext, ad []byte) ([]byte, error) {
	if plaintext == nil {
		return nil, nil
	}
	out := make([]byte, 1+b.aead.NonceSize(), 1+b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return b.aead.Seal(out, out[1:1+b.aead.NonceSize()], plaintext, ad), nil
}

// Open decrypts a value sealed with the same key and ad. A nil value opens
// to nil.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	if sealed == nil {
		return nil, nil
	}
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns+b.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	pt, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], ad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}
