package htmlcheck

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// The caniemail data set (https://github.com/hteumeuleu/caniemail, MIT
// licence, copyright Rémi Parmentier: caniemail/LICENSE), reduced by
// scripts/caniemail.py to what the check reads: for each feature its title,
// category and notes, and for each client the support its latest test found.
// The commit it was made from is recorded in the file (Data.Commit).
//
//go:embed caniemail/data.json
var dataJSON []byte

// Support levels of one client for one feature, as the data set writes them.
const (
	levelUnknown     = 0
	levelSupported   = 'y'
	levelPartial     = 'a'
	levelUnsupported = 'n'
)

// support is one client's support of one feature: its level and the numbers
// of the feature's notes that qualify it.
type support struct {
	level byte
	notes []string
}

// feature is one entry of the data set.
type feature struct {
	Slug         string            `json:"slug"`
	Title        string            `json:"title"`
	Category     string            `json:"category"`
	LastTestDate string            `json:"last_test_date"`
	Note         string            `json:"note"`
	Notes        map[string]string `json:"notes"`
	Support      []string          `json:"support"`

	support []support // by client index
}

// dataSet is the parsed data.json.
type dataSet struct {
	Source    string            `json:"source"`
	Commit    string            `json:"commit"`
	Date      string            `json:"date"`
	Licence   string            `json:"licence"`
	Families  map[string]string `json:"families"`
	Platforms map[string]string `json:"platforms"`
	Clients   []string          `json:"clients"`
	Features  []feature         `json:"features"`

	bySlug map[string]int
	// broad are the families tested with at least half of the features:
	// the ones a score can be given for (a few families were tested with a
	// few dozen features only).
	broad map[string]bool
}

var loadData = sync.OnceValues(func() (*dataSet, error) { return parseData(dataJSON) })

// parseData reads a data file as scripts/caniemail.py writes it.
func parseData(b []byte) (*dataSet, error) {
	d := &dataSet{}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("read the caniemail data: %w", err)
	}
	d.bySlug = make(map[string]int, len(d.Features))
	for i := range d.Features {
		f := &d.Features[i]
		if len(f.Support) != len(d.Clients) {
			return nil, fmt.Errorf("caniemail data: feature %s has %d support values for %d clients", f.Slug, len(f.Support), len(d.Clients))
		}
		f.support = make([]support, len(f.Support))
		for c, v := range f.Support {
			fields := strings.Fields(v)
			if len(fields) == 0 {
				continue
			}
			s := support{level: fields[0][0]}
			for _, n := range fields[1:] {
				s.notes = append(s.notes, strings.TrimPrefix(n, "#"))
			}
			f.support[c] = s
		}
		d.bySlug[f.Slug] = i
	}
	tested := map[string]int{}
	for _, f := range d.Features {
		seen := map[string]bool{}
		for c, s := range f.support {
			fam, _, _ := strings.Cut(d.Clients[c], ".")
			if s.level != levelUnknown && !seen[fam] {
				seen[fam] = true
				tested[fam]++
			}
		}
	}
	d.broad = map[string]bool{}
	for fam, n := range tested {
		if 2*n >= len(d.Features) {
			d.broad[fam] = true
		}
	}
	return d, nil
}

// clientName is a client's name for people: "Outlook Windows", "Gmail Android".
func (d *dataSet) clientName(client string) string {
	fam, plat, _ := strings.Cut(client, ".")
	return d.familyName(fam) + " " + d.platformName(plat)
}

func (d *dataSet) familyName(fam string) string {
	if n := d.Families[fam]; n != "" {
		return n
	}
	return fam
}

func (d *dataSet) platformName(plat string) string {
	if n := d.Platforms[plat]; n != "" {
		return n
	}
	return plat
}

// featureURL is the page of a feature on the data set's site.
func featureURL(slug string) string { return "https://www.caniemail.com/features/" + slug + "/" }

// ClientName is the name for people of a client as a report names it
// ("outlook.windows" is "Outlook Windows").
func ClientName(client string) string {
	d, err := loadData()
	if err != nil {
		return client
	}
	return d.clientName(client)
}
