// Package secret keeps credentials out of logs and responses: a Secret
// redacts itself in fmt, JSON and zap, and a Box encrypts them at rest.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
)

// Secret is a credential. Only Reveal gives the value.
type Secret string

const redacted = "[REDACTED]"

func (s Secret) String() string               { return redacted }
func (s Secret) GoString() string             { return redacted }
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (s Secret) Reveal() string               { return string(s) }
func (s Secret) IsSet() bool                  { return s != "" }

// Hash is the hex SHA-256 of a virtual key: the only form stored.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Box encrypts with AES-256-GCM under a key derived from a passphrase.
type Box struct{ aead cipher.AEAD }

// NewBox derives the AES key as SHA-256 of the passphrase.
func NewBox(passphrase string) (*Box, error) {
	if passphrase == "" {
		return nil, errors.New("encryption key is empty")
	}
	k := sha256.Sum256([]byte(passphrase))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext into base64(nonce|ciphertext).
func (b *Box) Seal(plaintext string) (string, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := b.aead.Seal(nonce, nonce, []byte(plaintext), nil)
	return base64.StdEncoding.EncodeToString(out), nil
}

// Open decrypts what Seal produced.
func (b *Box) Open(sealed string) (Secret, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return "", err
	}
	n := b.aead.NonceSize()
	if len(raw) < n {
		return "", errors.New("ciphertext too short")
	}
	pt, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return "", err
	}
	return Secret(pt), nil
}
