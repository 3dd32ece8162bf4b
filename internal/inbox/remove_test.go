package inbox_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// DELETE /api/emails/{emailId} and DELETE /api/emails/{namespace}/inbox: 204,
// the emails and their attachments gone from search, by id and by link, and
// the count right (also for substring searches served from memory); another
// organisation gets 404, and one the namespace is shared with 403.
func TestDeleteEmails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		a := e.deliver(e.ns, msg{from: "x@example.com", to: "a@default.localhost", subject: "first"})
		b := e.deliver(e.ns, msg{from: "x@example.com", to: "a@default.localhost", subject: "second", extra: "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=a.pdf\r\n\r\n%PDF\r\n--b--\r\n"})
		c := e.deliver(e.ns, msg{from: "x@example.com", to: "a@default.localhost", subject: "third"})
		e.subjects("default")
		var sr searchResp
		e.get(e.key, "/api/emails/default/inbox?subject_includes=i", &sr) // loads the copy in memory
		var atts struct {
			Data []struct{ ID string } `json:"data"`
		}
		e.get(e.key, "/api/emails/"+b+"/attachments", &atts)
		if len(atts.Data) != 1 {
			t.Fatalf("attachments of b: %+v", atts)
		}

		if resp := e.do(http.MethodDelete, e.otherKey, "/api/emails/"+a, "", nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("another organisation deletes: %d", resp.StatusCode)
		}
		if resp := e.do(http.MethodDelete, e.key, "/api/emails/"+b, "", nil); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("delete: %d", resp.StatusCode)
		}
		if resp := e.get(e.key, "/api/emails/"+b, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("deleted email by id: %d", resp.StatusCode)
		}
		if resp := e.get(e.key, "/api/attachments/"+atts.Data[0].ID, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("deleted email's attachment: %d", resp.StatusCode)
		}
		if resp := e.do(http.MethodDelete, e.key, "/api/emails/"+b, "", nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("delete twice: %d", resp.StatusCode)
		}
		if got := e.subjects("default"); !reflect.DeepEqual(got, []string{"third", "first"}) {
			t.Fatalf("after delete: %v", got)
		}
		sr = searchResp{}
		e.get(e.key, "/api/emails/default/inbox?subject_includes=i", &sr)
		if sr.TotalCount != 2 {
			t.Fatalf("substring search after delete: total %d", sr.TotalCount)
		}

		other, _ := e.tenants.OrgByName(ctx, "other")
		if _, err := e.tenants.ShareNamespace(ctx, "default", other.ID); err != nil {
			t.Fatal(err)
		}
		if resp := e.do(http.MethodDelete, e.otherKey, "/api/emails/"+a, "", nil); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("shared reader deletes: %d", resp.StatusCode)
		}
		if resp := e.do(http.MethodDelete, e.otherKey, "/api/emails/default/inbox", "", nil); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("shared reader clears: %d", resp.StatusCode)
		}
		if _, err := e.tenants.ShareNamespace(ctx, "default", ""); err != nil {
			t.Fatal(err)
		}
		if resp := e.do(http.MethodDelete, e.otherKey, "/api/emails/default/inbox", "", nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("another organisation clears: %d", resp.StatusCode)
		}
		if resp := e.do(http.MethodDelete, e.key, "/api/emails/default/inbox", "", nil); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("clear: %d", resp.StatusCode)
		}
		if got := e.subjects("default"); len(got) != 0 {
			t.Fatalf("after clear: %v", got)
		}
		for _, id := range []string{a, c} {
			if resp := e.get(e.key, "/api/emails/"+id, nil); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("cleared email %s: %d", id, resp.StatusCode)
			}
		}
		sr = searchResp{}
		e.get(e.key, "/api/emails/default/inbox?subject_includes=i", &sr)
		if sr.TotalCount != 0 {
			t.Fatalf("substring search after clear: %d", sr.TotalCount)
		}
		var n int
		if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM blobs").Scan(&n); err != nil || n != 0 {
			t.Fatalf("blobs left after clear: %d %v", n, err)
		}
	})
}
