package outbound

import (
	"context"
	"errors"
)

// verifiedDestination reports whether addr is a verified destination of the
// organisation: an external address it may send to (the seed's sending rule
// 1). Case is ignored (destinations are stored in lower case).
func (s *Store) verifiedDestination(ctx context.Context, orgID, addr string) (bool, error) {
	d, err := destinationByAddress(ctx, s.db, orgID, addr)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return d.Verified(), nil
}
