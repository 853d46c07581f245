// Package validate builds the errors of the VPP descriptors' Validate: one
// *api.InvalidValueError per value, naming every invalid field and saying
// what is wrong with each, so that the value status lists them all at once.
package validate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Problems collects what is wrong with a value; the zero value is empty and
// ready to use.
type Problems struct {
	fields []string
	errs   joined
}

// Add records an invalid field and why ("<field>: <why>").
func (p *Problems) Add(field, format string, args ...any) {
	p.fields = append(p.fields, field)
	p.errs = append(p.errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

// Model records an error of the models package (a validation or key
// error): the fields of a *models.ValidationError are named, and errors.As
// still finds the error in Err's result.
func (p *Problems) Model(err error) {
	var ve *models.ValidationError
	if errors.As(err, &ve) {
		p.fields = append(p.fields, ve.FieldNames()...)
	}
	p.errs = append(p.errs, err)
}

// Err returns nil when nothing was recorded, else an *api.InvalidValueError
// with the fields and every reason, on one line.
func (p *Problems) Err() error {
	switch len(p.errs) {
	case 0:
		return nil
	case 1:
		return api.NewInvalidValueError(p.errs[0], p.fields...)
	}
	return api.NewInvalidValueError(p.errs, p.fields...)
}

// Invalid turns an error of the models package about a value into an
// *api.InvalidValueError, naming the fields of a *models.ValidationError.
func Invalid(err error) error {
	var p Problems
	p.Model(err)
	return p.Err()
}

// joined is several errors on one line.
type joined []error

func (j joined) Error() string {
	msgs := make([]string, len(j))
	for i, e := range j {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

func (j joined) Unwrap() []error { return j }
