// Package secret holds the server's secret key and what is derived from it: signed,
// expiring links (attachment downloads, raw source, share tokens), per-namespace
// SMTP passwords, and (later) encryption of secrets at rest.
//
// Every use mixes a purpose string into the HMAC so a signature made for one
// purpose never verifies for another.
package secret

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Key is the server's secret key.
type Key struct {
	k []byte
}

// FileName is the generated key's name in the data directory.
const FileName = "secret.key"

// Load returns the configured key, or the one generated into dataDir (created on
// first use, mode 0600). A configured key must be at least 16 characters.
func Load(dataDir, configured string) (*Key, error) {
	if configured != "" {
		if len(configured) < 16 {
			return nil, errors.New("secret key must be at least 16 characters")
		}
		return New([]byte(configured)), nil
	}
	path := filepath.Join(dataDir, FileName)
	data, err := os.ReadFile(path)
	if err == nil {
		k, err := hex.DecodeString(strings.TrimSpace(string(data)))
		if err != nil || len(k) < 16 {
			return nil, fmt.Errorf("secret key file %s is damaged", path)
		}
		return New(k), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read secret key: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	k := make([]byte, 32)
	rand.Read(k)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return Load(dataDir, "") // another process created it first
	}
	if err != nil {
		return nil, fmt.Errorf("create secret key: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write secret key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("write secret key: %w", err)
	}
	return New(k), f.Close()
}

// New wraps raw key material.
func New(k []byte) *Key { return &Key{k: append([]byte(nil), k...)} }

func (k *Key) mac(purpose string, parts ...string) []byte {
	h := hmac.New(sha256.New, k.k)
	h.Write([]byte(purpose))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

// Derive returns a stable secret for purpose and parts, URL-safe, n bytes of
// entropy (n <= 32).
func (k *Key) Derive(n int, purpose string, parts ...string) string {
	return base64.RawURLEncoding.EncodeToString(k.mac(purpose, parts...)[:n])
}

// Hex returns a stable secret for purpose and parts as n bytes (n <= 32) in
// lower-case hexadecimal, for places that fold case, such as the local part of
// a mail address.
func (k *Key) Hex(n int, purpose string, parts ...string) string {
	return hex.EncodeToString(k.mac(purpose, parts...)[:n])
}

// Sign returns a signature over purpose, id and the expiry.
func (k *Key) Sign(purpose, id string, expires time.Time) string {
	return base64.RawURLEncoding.EncodeToString(k.mac(purpose, id, strconv.FormatInt(expires.Unix(), 10))[:20])
}

// Verify checks a signature made by Sign and that it has not expired at now.
func (k *Key) Verify(purpose, id string, expires time.Time, sig string, now time.Time) bool {
	if !now.Before(expires) {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, k.mac(purpose, id, strconv.FormatInt(expires.Unix(), 10))[:20])
}
