package outbound

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// verifiedDestination reports whether addr is a verified destination of the
// organisation: an external address it may send to (the seed's sending rule
// 1). It reads the destinations table of migration 0015, where an address is
// stored in lower case and verified once verified_at is set; the verification
// flow and the commands that fill the table are the destinations' own.
func (s *Store) verifiedDestination(ctx context.Context, orgID, addr string) (bool, error) {
	var one int
	err := s.db.QueryRow(ctx, "SELECT 1 FROM destinations WHERE org_id = ? AND address = ? AND verified_at IS NOT NULL",
		orgID, strings.ToLower(addr)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read destination %s: %w", addr, err)
	}
	return true, nil
}
