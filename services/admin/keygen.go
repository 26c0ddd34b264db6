package admin

import (
	"crypto/rand"

	"github.com/google/uuid"
)

const (
	keyPrefix    = "sk-gw-"
	keyRandLen   = 40
	keyPrefixLen = 12
	base62       = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// newVirtualKey returns "sk-gw-" + 40 base62 characters from crypto/rand
// (≈238 bits). Bytes ≥ 248 are rejected so every character is equally likely.
func newVirtualKey() (string, error) {
	out := make([]byte, 0, len(keyPrefix)+keyRandLen)
	out = append(out, keyPrefix...)
	buf := make([]byte, 64)
	for len(out) < cap(out) {
		if _, err := rand.Read(buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62
				continue
			}
			out = append(out, base62[b%62])
			if len(out) == cap(out) {
				break
			}
		}
	}
	return string(out), nil
}

func uuidString() string { return uuid.NewString() }
