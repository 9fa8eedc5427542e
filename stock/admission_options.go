package stock

// admissionConfig is an Admission's.
type admissionConfig struct {
	perSKU, perUser Rate
	instances       int
	inv             *Inventory
	ns              string
}

func defaultAdmissionConfig() admissionConfig {
	return admissionConfig{instances: 1, ns: DefaultPrefix}
}

// WithSKURate sets an Admission's budget of one SKU across all processes
// (no limit by default).
func WithSKURate(r Rate) Option {
	return configures("WithSKURate", admissionPart, func(o *options) {
		if !r.valid() {
			o.errs.Invalid("SKU rate %+v", r)
		}
		o.adm.perSKU = r
	})
}

// WithUserRate sets an Admission's budget of one user on one SKU across all
// processes (no limit by default).
func WithUserRate(r Rate) Option {
	return configures("WithUserRate", admissionPart, func(o *options) {
		if !r.valid() {
			o.errs.Invalid("user rate %+v", r)
		}
		o.adm.perUser = r
	})
}

// WithInstances sets how many processes share an Admission's budgets: while
// Redis fails, each process admits its share (1/n) of them (default 1).
func WithInstances(n int) Option {
	return configures("WithInstances", admissionPart, func(o *options) {
		if n < 1 {
			o.errs.Invalid("instances %d", n)
		}
		o.adm.instances = n
	})
}

// WithInventory lends an Admission inv's local sold-out memory (see
// WithLocalSoldOut): a SKU known sold out is refused with ErrSoldOut before
// any Redis call.
func WithInventory(inv *Inventory) Option {
	return configures("WithInventory", admissionPart, func(o *options) {
		if inv == nil {
			o.errs.Invalid("nil inventory")
		}
		o.adm.inv = inv
	})
}
