package secret

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoadGeneratesOnceWithPrivateMode(t *testing.T) {
	dir := t.TempDir()
	a, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", st.Mode().Perm())
	}
	b, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Derive(16, "x") != b.Derive(16, "x") {
		t.Fatal("reloaded key differs")
	}
	if _, err := Load(dir, "short"); err == nil {
		t.Fatal("short configured key accepted")
	}
}

func TestSignVerify(t *testing.T) {
	k := New([]byte("0123456789abcdef0123"))
	now := time.Unix(1_800_000_000, 0)
	exp := now.Add(time.Hour)
	sig := k.Sign("att", "id1", exp)
	if !k.Verify("att", "id1", exp, sig, now) {
		t.Fatal("valid signature rejected")
	}
	for name, ok := range map[string]bool{
		"other purpose": k.Verify("raw", "id1", exp, sig, now),
		"other id":      k.Verify("att", "id2", exp, sig, now),
		"other expiry":  k.Verify("att", "id1", exp.Add(time.Second), sig, now),
		"expired":       k.Verify("att", "id1", exp, sig, exp),
		"garbage":       k.Verify("att", "id1", exp, "!!", now),
	} {
		if ok {
			t.Errorf("%s: signature accepted", name)
		}
	}
}
