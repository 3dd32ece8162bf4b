package secret

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealerRoundTrip(t *testing.T) {
	k := New([]byte("0123456789abcdef0123"))
	s := k.Sealer("totp-secret")
	plain := []byte("12345678901234567890")
	ad := []byte("org\x00device")

	a := s.Seal(plain, ad)
	b := s.Seal(plain, ad)
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same value are identical: nonce not random")
	}
	if bytes.Contains(a, plain) {
		t.Fatal("sealed value contains the plaintext")
	}
	got, err := s.Open(a, ad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v; want %q", got, err, plain)
	}
	// The same key and purpose from a second Key value opens it (replicas agree).
	if got, err := New([]byte("0123456789abcdef0123")).Sealer("totp-secret").Open(a, ad); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open with an equal key = %q, %v", got, err)
	}
}

func TestSealerRejects(t *testing.T) {
	k := New([]byte("0123456789abcdef0123"))
	s := k.Sealer("totp-secret")
	ad := []byte("row-1")
	sealed := s.Seal([]byte("secret"), ad)

	flipped := append([]byte(nil), sealed...)
	flipped[len(flipped)-1] ^= 1
	otherKey := New([]byte("fedcba9876543210fedc")).Sealer("totp-secret")
	cases := map[string]func() ([]byte, error){
		"other associated data": func() ([]byte, error) { return s.Open(sealed, []byte("row-2")) },
		"other purpose":         func() ([]byte, error) { return k.Sealer("other").Open(sealed, ad) },
		"other server key":      func() ([]byte, error) { return otherKey.Open(sealed, ad) },
		"damaged":               func() ([]byte, error) { return s.Open(flipped, ad) },
		"truncated":             func() ([]byte, error) { return s.Open(sealed[:10], ad) },
		"empty":                 func() ([]byte, error) { return s.Open(nil, ad) },
		"unknown version": func() ([]byte, error) {
			v := append([]byte{9}, sealed[1:]...)
			return s.Open(v, ad)
		},
	}
	for name, open := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := open()
			if !errors.Is(err, ErrUnseal) || got != nil {
				t.Fatalf("Open = %q, %v; want ErrUnseal", got, err)
			}
		})
	}
}
