package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/tenant"
)

// userCmd manages the dashboard's users (CONTRACT.md section 3). Passwords are
// read from standard input, never from the command line, where other users of
// the machine could read them in the process list.
type userCmd struct {
	Create   userCreateCmd   `cmd:"" help:"Create a user in an organisation (password from stdin), or add an existing user to it."`
	List     userListCmd     `cmd:"" help:"List the users of an organisation."`
	Remove   userRemoveCmd   `cmd:"" help:"Remove a user (or, with --org, their membership of one organisation); their sessions end."`
	Password userPasswordCmd `cmd:"" help:"Set a user's password (from stdin); their sessions end."`
}

type userJSON struct {
	ID        string `json:"id"`
	Email     string `json:"email"`
	CreatedAt string `json:"created_at"`
}

func userView(u tenant.User) userJSON {
	return userJSON{ID: u.ID, Email: u.Email, CreatedAt: u.CreatedAt.UTC().Format(time.RFC3339)}
}

// readPassword reads the password from the first line of standard input.
func readPassword(in io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(in, tenant.MaxPasswordLen+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("give the password on standard input, as in: printf '%s\\n' \"$PASSWORD\" | catchbox admin user create EMAIL --org NAME")
	}
	return line, nil
}

type userCreateCmd struct {
	Email string `arg:"" help:"The user's email address (they sign in with it)."`
	Org   string `name:"org" required:"" help:"Organisation the user belongs to."`
}

func (c *userCreateCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	if u, err := env.tenants.UserByEmail(env.ctx, c.Email); err == nil {
		if err := env.tenants.AddMember(env.ctx, u.ID, o.ID); err != nil {
			return err
		}
		env.print(userView(u), "Added user %s (id %s) to organisation %s", u.Email, u.ID, o.Name)
		return nil
	}
	password, err := readPassword(os.Stdin)
	if err != nil {
		return err
	}
	u, err := env.tenants.CreateUser(env.ctx, c.Email, password, o.ID)
	if err != nil {
		return err
	}
	env.print(userView(u), "Created user %s (id %s) in organisation %s", u.Email, u.ID, o.Name)
	return nil
}

type userListCmd struct {
	Org string `name:"org" required:"" help:"Organisation."`
}

func (c *userListCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	ms, err := env.tenants.Members(env.ctx, o.ID)
	if err != nil {
		return err
	}
	if env.json {
		data := make([]userJSON, 0, len(ms))
		for _, m := range ms {
			data = append(data, userView(m.User))
		}
		env.print(map[string]any{"organisation": o.Name, "data": data}, "")
		return nil
	}
	for _, m := range ms {
		fmt.Fprintf(env.out, "%s\t%s\tmember since %s\n", m.ID, m.Email, m.Since.UTC().Format(time.RFC3339))
	}
	return nil
}

type userRemoveCmd struct {
	Email string `arg:"" help:"The user's email address."`
	Org   string `name:"org" help:"Remove only the membership of this organisation."`
}

func (c *userRemoveCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	u, err := env.tenants.UserByEmail(env.ctx, c.Email)
	if err != nil {
		return err
	}
	if c.Org != "" {
		o, err := env.tenants.OrgByName(env.ctx, c.Org)
		if err != nil {
			return err
		}
		if err := env.tenants.RemoveMember(env.ctx, u.ID, o.ID); err != nil {
			return err
		}
		env.print(map[string]any{"id": u.ID, "email": u.Email, "organisation": o.Name, "removed": true},
			"Removed user %s from organisation %s", u.Email, o.Name)
		return nil
	}
	if err := env.tenants.RemoveUser(env.ctx, u.ID); err != nil {
		return err
	}
	env.print(map[string]any{"id": u.ID, "email": u.Email, "removed": true}, "Removed user %s; their sessions have ended", u.Email)
	return nil
}

type userPasswordCmd struct {
	Email string `arg:"" help:"The user's email address."`
	Org   string `name:"org" help:"Ignored; accepted for symmetry with the other user commands."`
}

func (c *userPasswordCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	u, err := env.tenants.UserByEmail(env.ctx, c.Email)
	if err != nil {
		return err
	}
	password, err := readPassword(os.Stdin)
	if err != nil {
		return err
	}
	if err := env.tenants.SetPassword(env.ctx, u.ID, password); err != nil {
		return err
	}
	env.print(userView(u), "Set the password of %s; their sessions have ended", u.Email)
	return nil
}
