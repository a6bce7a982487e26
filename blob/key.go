package blob

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxKeyLen keeps keys (plus a short gs prefix) under GCS's 1024-byte
// object name limit.
const maxKeyLen = 900

// ValidKey reports whether key is a valid key: non-empty, at most 900 bytes
// of UTF-8 without control characters or backslashes, not absolute, made of
// non-empty "/"-separated segments none of which starts with "." (this rules
// out "." and ".." and reserves dot-names for the file store's temporary and
// metadata files). Both stores accept exactly the same keys.
func ValidKey(key string) bool {
	if key == "" || len(key) > maxKeyLen || !utf8.ValidString(key) || strings.ContainsRune(key, '\\') {
		return false
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg[0] == '.' {
			return false
		}
	}
	return true
}

func checkKey(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	return nil
}

// checkPrefix accepts "" or any prefix of a valid key whose last, possibly
// partial, segment does not start with ".".
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	// A prefix ending in "/" is a complete directory; otherwise complete it
	// with a neutral character so the partial last segment validates.
	probe := prefix + "x"
	if !ValidKey(probe) {
		return fmt.Errorf("%w: prefix %q", ErrInvalidKey, prefix)
	}
	return nil
}

// AttachmentKey returns the content-addressed key of an attachment,
// "attachments/sha256/ab/cd/<sha256>" (docs/contract.md §7). sha256hex is the hex
// SHA-256 of the bytes, any case; anything else yields "", which every
// Store rejects with ErrInvalidKey.
func AttachmentKey(sha256hex string) string {
	h := strings.ToLower(sha256hex)
	if len(h) != 64 {
		return ""
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return "attachments/sha256/" + h[0:2] + "/" + h[2:4] + "/" + h
}
