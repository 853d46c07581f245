package kvscheduler

import "slices"

// appendDoubling appends v to s, doubling the capacity of s when it is full.
// append grows a large slice by a quarter at a time: a slice that grows to
// hundreds of thousands of elements, as in a bulk transaction, is allocated
// and copied about five times its final size, against about twice here (and
// the garbage collector runs as much more often).
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 8))
	}
	return append(s, v)
}

// chunks is an append-only list stored in chunks, so that growing it never
// copies what it holds (a bulk transaction writes hundreds of thousands of
// undo entries and steps). Chunks grow from 8 to 4096 elements.
type chunks[T any] struct {
	list [][]T
	n    int
}

func (c *chunks[T]) add(v T) {
	if k := len(c.list); k == 0 || len(c.list[k-1]) == cap(c.list[k-1]) {
		size := 8 << min(k, 9)
		c.list = append(c.list, make([]T, 0, size))
	}
	last := &c.list[len(c.list)-1]
	*last = append(*last, v)
	c.n++
}

func (c *chunks[T]) len() int { return c.n }

// at returns the i-th element.
func (c *chunks[T]) at(i int) *T {
	for _, ch := range c.list {
		if i < len(ch) {
			return &ch[i]
		}
		i -= len(ch)
	}
	panic("chunks: index out of range")
}

// each calls f for every element in order, with its index.
func (c *chunks[T]) each(f func(i int, v *T)) {
	i := 0
	for _, ch := range c.list {
		for j := range ch {
			f(i, &ch[j])
			i++
		}
	}
}

// reverse calls f for every element, last first.
func (c *chunks[T]) reverse(f func(v *T)) {
	for k := len(c.list) - 1; k >= 0; k-- {
		ch := c.list[k]
		for j := len(ch) - 1; j >= 0; j-- {
			f(&ch[j])
		}
	}
}
