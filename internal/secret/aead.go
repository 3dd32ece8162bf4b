package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
)

// sealVersion leads every sealed value, so a later change of algorithm or key
// derivation can tell old values from new ones.
const sealVersion = 1

// ErrUnseal is returned when a sealed value does not decrypt: it was damaged, made
// for another purpose or associated data, or sealed under another server key.
var ErrUnseal = errors.New("sealed value cannot be opened")

// Sealer encrypts small secrets for storage at rest (TOTP shared secrets) with
// AES-256-GCM. Its key is derived from the server key and a purpose string, so a
// value sealed for one purpose never opens for another, and nothing but the server
// key has to be kept secret. A Sealer is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

// Sealer returns the sealer for purpose. Build it once and keep it: deriving the
// key and expanding the AES key schedule is the costly part.
func (k *Key) Sealer(purpose string) *Sealer {
	// HMAC-SHA256 gives exactly the 32 bytes AES-256 needs; the fixed first field
	// keeps these keys apart from every Derive and Sign output.
	block, err := aes.NewCipher(k.mac("aes-256-gcm", purpose))
	if err != nil {
		panic("secret: AES key of the wrong size: " + err.Error()) // cannot happen: the key is 32 bytes
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("secret: GCM unavailable: " + err.Error())
	}
	return &Sealer{aead: aead}
}

// Seal encrypts plaintext with a fresh random nonce. associated is authenticated but
// not stored (for example the id of the row the value belongs to), so a sealed value
// copied to another row does not open there.
func (s *Sealer) Seal(plaintext, associated []byte) []byte {
	n := s.aead.NonceSize()
	out := make([]byte, 1+n, 1+n+len(plaintext)+s.aead.Overhead())
	out[0] = sealVersion
	rand.Read(out[1 : 1+n])
	return s.aead.Seal(out, out[1:1+n], plaintext, associated)
}

// Open decrypts a value made by Seal with the same associated data.
func (s *Sealer) Open(sealed, associated []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n+s.aead.Overhead() || sealed[0] != sealVersion {
		return nil, ErrUnseal
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], associated)
	if err != nil {
		return nil, ErrUnseal
	}
	return plain, nil
}
