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
        /** Upper bound of write point `p` for device configuration `deviceId`: its power limit for power points. */
        upperBound: function (p, deviceId) {
            var device = deviceId ? RED.nodes.node(deviceId) : null;
            var limit = device ? Number(device.powerLimit) : NaN;
            return p.powerLimited && device && device.powerLimit !== '' && Number.isInteger(limit) ? limit : p.max;
        },
        /** The catalogue's words for what `p` accepts, with the device's power limit as the upper bound. */
        allowedText: function (p, deviceId) {
            var max = shared.upperBound(p, deviceId);
            return max === p.max ? p.allowed : p.allowed.replace(' to ' + p.max, ' to ' + max);
        },
        /** The runtime's rule `name` ({min, max, integer, off, unit}, src/inputs.ts), or null until the catalogue has arrived. */
        rule: function (name) {
            return shared.data ? shared.data.rules.numbers[name] : null;
        },
        /** `v` as a number where the runtime reads one (src/numbers.ts: decimal only, "0x32" is not 50), else undefined. */
        decimalNumber: function (v) {
            if (typeof v === 'number') {
                return isFinite(v) ? v : undefined;
            }
            if (typeof v !== 'string' || !shared.data) {
                return undefined;
            }
            var rules = shared.data.rules;
            var text = v.trim();
            if (!new RegExp(rules.decimalPattern, rules.decimalFlags).test(text)) {
                return undefined;
            }
            var n = Number(text);
            return isFinite(n) ? n : undefined;
        },
        /** Whether `v` passes the runtime's number rule `name` (as numberIn in src/inputs.ts); true until the rules arrive. */
        fitsRule: function (name, v) {
            var rule = shared.rule(name);
            if (!rule) {
                return true;
            }
            if (rule.off && (v === undefined || v === null || String(v).trim() === '')) {
                return true;
            }
            var n = shared.decimalNumber(v);
            if (rule.off && n === 0) {
                return true;
            }
            return n !== undefined && n >= rule.min && n <= rule.max && (!rule.integer || Number.isInteger(n));
        },
        /** Fetches the catalogue once (again after a failure); `type`'s nodes are validated again when it arrives. */
        load: function (type) {
            if (type) {
                dependentTypes[type] = true;
            }
            if (!loading) {
                loading = $.getJSON('localbattery/catalogue').then(
                    function (data) {
                        data.read.forEach(function (p) {
                            shared.readByName[p.name] = p;
                            shared.readByAddress[p.address] = p;
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
