package web

import (
	"bytes"
	"errors"
	"image"
	_ "image/gif" // the formats an uploaded QR image may be in
	_ "image/jpeg"
	_ "image/png"
	"io"
	"mime/multipart"
	"net/http"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// Limits of an uploaded QR image: the bytes of the upload, and the pixels of
// the image decoded (checked from its header before it is decoded, so a small
// file that would decode to a huge image is refused).
const (
	maxQRUploadBytes = 2 << 20
	maxQRPixels      = 4096 * 4096
)

// parseAuthenticatorForm reads the add-authenticator form, URL-encoded or, with
// a QR image, multipart.
func parseAuthenticatorForm(w http.ResponseWriter, r *http.Request) error {
	if !isMultipart(r) {
		return parseForm(w, r)
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxQRUploadBytes)
	if err := r.ParseMultipartForm(maxQRUploadBytes); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return badRequest("The QR image is larger than %d MiB.", maxQRUploadBytes>>20)
		}
		return badRequest("The form could not be read.")
	}
	return nil
}

func isMultipart(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return len(ct) >= 19 && ct[:19] == "multipart/form-data"
}

// uploadedQR returns the text of the QR code in the form's qr_image file, ""
// when no file was chosen.
func uploadedQR(r *http.Request) (string, error) {
	if r.MultipartForm == nil {
		return "", nil
	}
	f, hdr, err := r.FormFile("qr_image")
	if errors.Is(err, http.ErrMissingFile) || err == nil && hdr.Size == 0 {
		return "", nil
	}
	if err != nil {
		return "", badRequest("qr_image: the file could not be read.")
	}
	defer f.Close()
	return decodeQR(f)
}

// decodeQR reads a PNG, JPEG or GIF image and returns the text of the QR code
// in it.
func decodeQR(f multipart.File) (string, error) {
	data, err := io.ReadAll(io.LimitReader(f, maxQRUploadBytes+1))
	if err != nil || len(data) > maxQRUploadBytes {
		return "", badRequest("qr_image: the file could not be read.")
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", badRequest("qr_image: not a PNG, JPEG or GIF image.")
	}
	if cfg.Width*cfg.Height > maxQRPixels {
		return "", badRequest("qr_image: the image is %d × %d pixels; at most %d pixels are read.", cfg.Width, cfg.Height, maxQRPixels)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return "", badRequest("qr_image: not a PNG, JPEG or GIF image.")
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		return "", badRequest("qr_image: the image could not be read.")
	}
	hints := map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_TRY_HARDER: true}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, hints)
	if err != nil {
		return "", badRequest("qr_image: no QR code found in the image. %s", qrHint)
	}
	return res.GetText(), nil
}

// qrHint says what a readable upload looks like.
const qrHint = "Upload a screenshot of the QR code the site shows when you set up two-factor sign-in, or paste its otpauth:// URL instead."
