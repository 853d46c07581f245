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
	var all func(prefix string, n int)
	checked, plain := 0, 0
	all = func(prefix string, n int) {
		check(t, prefix)
		checked++
		if plainName(prefix) {
			plain++
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			all(prefix+c, n-1)
		}
	}
	all("", 4)
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
