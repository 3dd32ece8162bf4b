package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/smtp"
	"strconv"
	"time"

	"github.com/catchbox/catchbox/client"
)

// A test of a sign-up flow: the service under test mails a verification link
// and code to a fresh inbox; the test waits for the mail and takes both from
// it. (Here the example sends the mail itself, over SMTP, to the address of
// the namespace's SMTP settings.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.NewFromEnv() // CATCHBOX_URL and CATCHBOX_API_KEY
	if err != nil {
		log.Fatal(err)
	}
	inbox := fmt.Sprintf("signup-%d", time.Now().UnixNano())
	if _, err := c.SaveNamespace(ctx, inbox, client.SettingsRequest{RetentionTime: client.Ptr(3600)}); err != nil {
		log.Fatal(err)
	}

	// The service under test signs alice up.
	to := "alice@" + inbox + ".localhost"
	s, err := c.SMTPSettings(ctx, inbox)
	if err != nil {
		log.Fatal(err)
	}
	err = smtp.SendMail(net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), nil, "no-reply@app.example", []string{to},
		[]byte("From: no-reply@app.example\r\nTo: "+to+"\r\nSubject: Confirm your address\r\n"+
			"Content-Type: text/html\r\n\r\n<p>Your code is <b>482913</b>, or "+
			"<a href=\"https://app.example/confirm?token=Qm9i&amp;uid=42\">confirm your address</a>.</p>\r\n"))
	if err != nil {
		log.Fatal(err)
	}

	mail, err := c.WaitForEmail(ctx, inbox, client.Filter{To: to, Subject: "confirm"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(mail.Subject)
	fmt.Println(mail.Links[0].Href, "-", mail.Links[0].Text)
	fmt.Println(mail.Codes[0])
	// Output:
	// Confirm your address
	// https://app.example/confirm?token=Qm9i&uid=42 - confirm your address
	// 482913
}

// WaitForSMS waits for a sign-in code sent to one of the organisation's SMS
// numbers; here a virtual SMS stands in for the carrier.
func ExampleClient_WaitForSMS() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	numbers, err := c.SMSNumbers(ctx)
	if err != nil || len(numbers) == 0 {
		log.Fatal("no SMS number: ", err)
	}
	phone := numbers[0].PhoneNumber
	since := time.Now()
	go c.SendVirtualSMS(ctx, client.VirtualSMS{FromNumber: "+15005550006", ToNumber: phone,
		Body: "G-661904 is your sign-in code."})

	sms, err := c.WaitForSMS(ctx, phone, client.SMSFilter{Body: "sign-in code", Since: since})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sms.Codes)
	// Output: [661904]
}

// OTP gives the current code of a virtual authenticator saved from the
// secret a sign-up page showed.
func ExampleClient_OTP() {
	ctx := context.Background()
	c, err := client.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	device, err := c.CreateOTPAuthDevice(ctx, client.OTPAuthDevice{
		URL: "otpauth://totp/Acme:alice@example.com?secret=JBSWY3DPEHPK3PXP&issuer=Acme"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.DeleteDevice(ctx, device.ID)
	otp, err := c.OTP(ctx, device.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(device.Name, len(otp.Code), otp.Expires.After(time.Now()))
	// Output: Acme (alice@example.com) 6 true
}

// Failures carry the API's error body: branch on its code.
func ExampleError() {
	c, err := client.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.SearchEmails(context.Background(), "default", client.SearchQuery{Limit: 50})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
		for _, f := range apiErr.Errors {
			fmt.Println(f.Field, f.Detail[0].Description)
		}
	}
	// Output:
	// 400 invalid_parameter
	// limit must be between 1 and 20
}

// A wait ends with its context: the error wraps ErrWaitEnded and the
// context's error.
func ExampleClient_WaitForEmail_timeout() {
	c, err := client.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = c.WaitForEmail(ctx, "default", client.Filter{Subject: "a mail nobody sends"})
	fmt.Println(errors.Is(err, client.ErrWaitEnded), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

// Send mails a message from a namespace; OutboundEmail tells what happened to
// each recipient. Here the recipient is an address of the same namespace, so
// the message is delivered into its inbox without leaving the server.
func ExampleClient_Send() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	ns := fmt.Sprintf("send-%d", time.Now().UnixNano())
	if _, err := c.SaveNamespace(ctx, ns, client.SettingsRequest{}); err != nil {
		log.Fatal(err)
	}
	sent, err := c.Send(ctx, ns, client.SendRequest{
		To:      []string{"Jane <jane@" + ns + ".localhost>"},
		Subject: "Your receipt",
		Text:    "Thank you for your order.",
	})
	if err != nil {
		log.Fatal(err)
	}
	detail, err := c.OutboundEmail(ctx, sent.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sent.Type, sent.Subject)
	fmt.Println(detail.Recipients[0].Name, detail.Recipients[0].Type)
	// Output:
	// new Your receipt
	// Jane to
}
