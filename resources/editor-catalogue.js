// The point catalogue in the editor, shared by every node of the package: fetched once from the package's
// admin route and indexed here, so no point list is ever typed into an editor file. Each of those nodes' .html files
// loads this script; only the first copy defines it, so every node type sees one catalogue and one request.
(function () {
    if (window.localBatteryCatalogue) {
        return;
    }
    var loading = null;
    // Node types whose validation depends on the catalogue: checked again when it arrives.
    var dependentTypes = {};

    var shared = {
        /** The catalogue ({read, write, ...}) once it has arrived, else null. */
        data: null,
        readByName: {},
        readByAddress: {},
        writeByName: {},
        /**
         * The runtime's own rule functions (src/editor/editor-rules.ts, built for the browser and served by the package's
         * rules route), or null until they have arrived. Each check gives null for a value the runtime takes.
         */
        rules: null,
        /** The charge and discharge limits the runtime will use for device configuration `deviceId` (the rules' limitsOf). */
        limits: function (deviceId) {
            var device = deviceId ? RED.nodes.node(deviceId) : null;
            return shared.rules ? shared.rules.limitsOf(device) : null;
        },
        /**
         * The runtime's words for what `p` accepts, with the device's limits; for a choice (which no limit changes) the
         * catalogue's, in the editor's language.
         */
        allowedText: function (p, deviceId) {
            return shared.rules && !p.enum ? shared.rules.allowedText(p.name, shared.limits(deviceId)) : p.allowed;
        },
        /** The runtime's rule `name` ({min, max, integer, off, unit}, src/editor/inputs.ts), or null until the catalogue has arrived. */
        rule: function (name) {
            return shared.data ? shared.data.rules.numbers[name] : null;
        },
        /** `v` as a number where the runtime reads one (src/numbers.ts: decimal only, "0x32" is not 50), else undefined. */
        decimalNumber: function (v) {
            return shared.rules ? shared.rules.decimalNumber(v) : undefined;
        },
        /** Whether `v` passes the runtime's number rule `name` (numberIn in src/editor/inputs.ts); true until the rules arrive. */
        fitsRule: function (name, v) {
            return !shared.rules || shared.rules.numberProblem(name, v) === null;
        },
        /** Fetches the catalogue once (again after a failure); `type`'s nodes are validated again when it arrives. */
        load: function (type) {
            if (type) {
                dependentTypes[type] = true;
            }
            if (!loading) {
                // The catalogue (its labels in the editor's language), then the rules: both come from this package's
                // routes, with the editor's credentials.
                loading = $.getJSON('localbattery/catalogue', { lang: RED.i18n.lang() })
                    .then(function (data) {
                        return $.ajax({ url: 'localbattery/rules.js', dataType: 'script', cache: true }).then(function () {
                            return data;
                        });
                    })
                    .then(
                        function (data) {
                            shared.rules = window.localBatteryRules;
                            // A model read point (gridPower) joins the read points at the head of its category (readPointsWithModelPoints), its
                            // address shown as the addresses it is read at (whichever the device serves).
                            (data.modelRead || []).forEach(function (p) {
                                var at = data.read.findIndex(function (q) {
                                    return q.category === p.category;
                                });
                                data.read.splice(at < 0 ? 0 : at, 0, Object.assign({}, p, { address: p.addresses.join(' / ') }));
                            });
                            data.read.forEach(function (p) {
                                shared.readByName[p.name] = p;
                                if (typeof p.address === 'number') {
                                    shared.readByAddress[p.address] = p;
                                }
                            });
                            data.write.forEach(function (p) {
                                shared.writeByName[p.name] = p;
                            });
                            shared.data = data;
                            var changed = false;
                            var revalidate = function (n) {
                                if (dependentTypes[n.type]) {
                                    RED.editor.validateNode(n);
                                    n.dirty = true;
                                    changed = true;
                                }
                            };
                            RED.nodes.eachNode(revalidate);
                            RED.nodes.eachConfig(revalidate);
                            if (changed) {
                                RED.view.redraw(true);
                            }
                            return data;
                        },
                        function (xhr) {
                            loading = null;
                            return $.Deferred().reject(xhr).promise();
                        },
                    );
            }
            return loading;
        },
    };
    window.localBatteryCatalogue = shared;
})();
