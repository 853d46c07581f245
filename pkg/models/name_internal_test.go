package models

import (
	"strings"
	"testing"
)

// TestPlainNameAgreesWithRunes: every string of up to four bytes from an
// alphabet of the cases that matter (a letter, ".", "/", space, NUL, DEL,
// a byte of a two-byte rune, an invalid byte): plainName accepts exactly
// the valid names of printable ASCII (checkNameRunes decides the rest).
func TestPlainNameAgreesWithRunes(t *testing.T) {
	alphabet := []string{"a", ".", "/", " ", "\x00", "\x7f", "~", "!", "\xc3\xa9", "\xff"}
	checked, plain := 0, 0
	eachString(alphabet, 4, func(s string) {
		check(t, s)
		checked++
		if plainName(s) {
			plain++
		}
	})
	for _, s := range []string{strings.Repeat("n", MaxNameLen), strings.Repeat("n", MaxNameLen+1),
		strings.Repeat("a/", 127) + "a", strings.Repeat("a/", 127) + "ab", "GigabitEthernet0/8/0", "a.b/c..d/...", "x/../y"} {
		check(t, s)
	}
	if plain == 0 || plain == checked {
		t.Fatalf("plainName accepted %d of %d names: the alphabet does not test it", plain, checked)
	}
}

// check fails the test when plainName and checkNameRunes disagree on s.
func check(t *testing.T, s string) {
	t.Helper()
	valid := checkNameRunes(s) == nil
	ascii := true
	for i := range len(s) {
		ascii = ascii && s[i] >= 0x20 && s[i] < 0x7f
	}
	if got, want := plainName(s), valid && ascii; got != want {
		t.Fatalf("plainName(%q) = %v, want %v (checkNameRunes: %v)", s, got, want, checkNameRunes(s))
	}
	if err, want := checkName(s), checkNameRunes(s); (err == nil) != (want == nil) || (err != nil && err.Error() != want.Error()) {
		t.Fatalf("checkName(%q) = %v, checkNameRunes %v", s, err, want)
	}
}

// FuzzPlainName: as TestPlainNameAgreesWithRunes, for any string.
func FuzzPlainName(f *testing.F) {
	for _, s := range []string{"", "a", "a/b", "a//b", "./a", "a b", "é", "\xff", strings.Repeat("n", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

// BenchmarkCheckName: checkName, and checkNameRunes (every name through
// Unicode's tables) as the reference, on names of the usual kinds.
func BenchmarkCheckName(b *testing.B) {
	for _, name := range []string{"bench-lp", "GigabitEthernet0/8/0", "unicode-é"} {
		for what, check := range map[string]func(string) error{"checkName": checkName, "runes": checkNameRunes} {
			b.Run(what+"/"+strings.ReplaceAll(name, "/", "_"), func(b *testing.B) {
				for range b.N {
					if err := check(name); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestValidVPPNameAgreesWithParseKey: ValidVPPName accepts exactly the
// names whose interface and bridge domain keys parse: every string of up to
// 3 bytes from a tricky alphabet, and names around the tag's length.
func TestValidVPPNameAgreesWithParseKey(t *testing.T) {
	alphabet := []string{"a", ".", "/", " ", "\x00", "~", "\xc3\xa9", "\xff"}
	agree := func(s string) bool {
		for _, m := range []*Model{VPPInterface, VPPBridgeDomain} {
			_, err := m.ParseKey(m.KeyPrefix + s)
			if ValidVPPName(s) != (err == nil) {
				t.Fatalf("ValidVPPName(%q) = %v, ParseKey of its %s key: %v", s, ValidVPPName(s), m.Name, err)
			}
		}
		return ValidVPPName(s)
	}
	valid, checked := 0, 0
	eachString(alphabet, 3, func(s string) {
		checked++
		if agree(s) {
			valid++
		}
	})
	for _, s := range []string{strings.Repeat("n", vppTagLen), strings.Repeat("n", vppTagLen+1),
		strings.Repeat("\xc3\xa9", vppTagLen/2) + "n", strings.Repeat("\xc3\xa9", vppTagLen/2+1), "GigabitEthernet0/8/0", "loop0/"} {
		checked++
		if agree(s) {
			valid++
		}
	}
	if valid == 0 || valid == checked {
		t.Fatalf("ValidVPPName accepted %d of %d names: the alphabet does not test it", valid, checked)
	}
}

// eachString calls f with every string of at most n pieces of the
// alphabet, the empty one first.
func eachString(alphabet []string, n int, f func(string)) {
	var all func(prefix string, n int)
	all = func(prefix string, n int) {
		f(prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			all(prefix+c, n-1)
		}
	}
	all("", n)
}
