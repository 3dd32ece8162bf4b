package web_test

import (
	"bytes"
	"image"
	pngenc "image/png"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"

	qrencode "github.com/skip2/go-qrcode"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// postFile posts a multipart form with fields and one file, as a browser
// does for a form with enctype="multipart/form-data".
func (b *browser) postFile(path string, fields map[string]string, field, filename string, data []byte) page {
	b.e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	fw, err := mw.CreateFormFile(field, filename)
	if err != nil {
		b.e.t.Fatal(err)
	}
	fw.Write(data)
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, b.e.base+path, &buf)
	if err != nil {
		b.e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", b.e.base)
	resp, err := b.client.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: body.String()}
}

// An authenticator added from a QR image: a PNG made by another QR library
// (go-qrcode) holding an otpauth URL is read and the device shown; an image
// without a code, a file that is no image, and one too large are 400s that
// say so.
func TestAuthenticatorFromQRImage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		png, err := qrencode.Encode("otpauth://totp/Initech:bob@initech.test?secret=GEZDGNBVGY3TQOJQ&issuer=Initech", qrencode.Medium, 256)
		if err != nil {
			t.Fatal(err)
		}
		if p := b.postFile("/authenticators", map[string]string{"name": "Initech VPN"}, "qr_image", "qr.png", png); p.status != http.StatusSeeOther {
			t.Fatalf("add by QR image: %d %s", p.status, p.body)
		}
		p := b.get("/authenticators")
		mustContain(t, p, "Initech VPN", "bob@initech.test")
		if n := len(regexp.MustCompile(`data-device="`).FindAllString(p.body, -1)); n != 1 {
			t.Fatalf("%d devices listed, want 1", n)
		}

		img := image.NewGray(image.Rect(0, 0, 200, 200))
		for i := range img.Pix {
			img.Pix[i] = 0xff
		}
		var white bytes.Buffer
		if err := pngenc.Encode(&white, img); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			data []byte
			want string
		}{
			{"no code in the image", white.Bytes(), "no QR code found"},
			{"not an image", []byte("otpauth://totp/x?secret=GEZDGNBVGY3TQOJQ"), "not a PNG, JPEG or GIF image"},
			{"too large", bytes.Repeat([]byte{0}, 2<<20+1), "larger than"},
		} {
			p := b.postFile("/authenticators", nil, "qr_image", "qr.png", c.data)
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, c.want) {
				t.Errorf("%s: %d, want 400 saying %q:\n%.300s", c.name, p.status, c.want, p.body)
			}
		}
		// A form with an empty file input still adds by secret.
		if p := b.postFile("/authenticators", map[string]string{"secret": "JBSWY3DPEHPK3PXP", "name": "GitHub"}, "qr_image", "", nil); p.status != http.StatusSeeOther {
			t.Fatalf("add by secret in a multipart form: %d %s", p.status, p.body)
		}
	})
}
