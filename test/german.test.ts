/** The catalogue's German texts (src/points/german.ts): complete, nothing the catalogue does not know, and how they are served. */
import should from 'should';
import { MODEL_READ_POINTS, READ_POINTS, WRITE_POINTS, catalogueJson, describeValue, type Point } from '../src/points/catalogue';
import { GERMAN, catalogueInLanguage, isGerman } from '../src/points/german';

const POINTS: { name: string; label: string; category: string; enum?: { label: string }[] }[] = [
  ...READ_POINTS,
  ...MODEL_READ_POINTS,
  ...WRITE_POINTS,
];
const NAMES = POINTS.map((p) => p.name);
const CATEGORIES = [...new Set(POINTS.map((p) => p.category))];
const ENUM_LABELS = [...new Set(POINTS.flatMap((p) => (p.enum ?? []).map((o) => o.label)))];

/** The entries of `table` that are missing or empty for `keys`. */
const untranslated = (table: Readonly<Record<string, string>>, keys: string[]) => keys.filter((key) => !table[key]?.trim());
/** The keys of `table` that are not among `keys`. */
const unknown = (table: Readonly<Record<string, string>>, keys: string[]) => Object.keys(table).filter((key) => !keys.includes(key));

describe('German catalogue texts', function () {
  it('give every point, category and enum label of the catalogue a German text', function () {
    // About 160 points, two dozen categories and three dozen enum labels: a point added without its text fails here.
    should(NAMES.length).be.above(150);
    should(untranslated(GERMAN.points, NAMES)).eql([]);
    should(untranslated(GERMAN.categories, CATEGORIES)).eql([]);
    should(untranslated(GERMAN.enums, ENUM_LABELS)).eql([]);
  });

  it('have no text for a point, category or enum label the catalogue does not know', function () {
    should(unknown(GERMAN.points, NAMES)).eql([]);
    should(unknown(GERMAN.categories, CATEGORIES)).eql([]);
    should(unknown(GERMAN.enums, ENUM_LABELS)).eql([]);
  });

  it('keep categories apart: the pickers group by the German category', function () {
    const german = CATEGORIES.map((category) => GERMAN.categories[category]);
    should(new Set(german).size).equal(CATEGORIES.length);
  });

  it('tell German editor languages from the others', function () {
    for (const language of ['de', 'de-DE', 'de-AT', 'DE-ch']) should(isGerman(language)).be.true(language);
    for (const language of ['en-US', 'fr', 'deu', '', undefined, ['de'], 7]) should(isGerman(language)).be.false(String(language));
  });

  it('serve a German editor the catalogue with German labels, categories, enum labels and allowed values; names, addresses and units stay', function () {
    const english = catalogueJson();
    const german = catalogueInLanguage(english, 'de-DE');
    const byName = <P extends { name: string }>(points: P[], name: string) => points.find((p) => p.name === name)!;
    should(byName(german.read, 'batterySoc')).containDeep({
      name: 'batterySoc',
      address: 6002,
      unit: '%',
      label: 'Akku-Ladezustand (SOC) gesamt',
      category: 'Akku',
    });
    should(byName(german.modelRead, 'gridPower')).containDeep({
      label: 'Netzleistung',
      category: 'Zähler und Netz',
      addresses: [11016, 21028],
    });
    should(byName(german.read, 'batteryState').enum!.map((o) => [o.value, o.label])).eql([
      [1000, 'Ruhend'],
      [1001, 'Laden'],
      [1002, 'Entladen'],
    ]);
    const mode = byName(german.write, 'workingModeSetting');
    should(mode.enum!.map((o) => o.label)).eql(['Eigenverbrauch vorrangig', 'Echtzeitsteuerung', 'Lade-/Entladezeitplan']);
    should(mode.allowed).equal('einer der Werte 1 (Eigenverbrauch vorrangig), 4 (Echtzeitsteuerung), 5 (Lade-/Entladezeitplan)');
    should(byName(german.write, 'controlPower').allowed).equal('eine ganze Zahl von 50 bis 2400 W');
    // Every point in German, nothing else changed.
    for (const key of ['read', 'modelRead', 'write'] as const) {
      const points = german[key] as Point[];
      should(points.map((p) => p.label)).eql(english[key].map((p) => GERMAN.points[p.name]));
      should(points.map((p) => p.category)).eql(english[key].map((p) => GERMAN.categories[p.category]));
      const rest = (p: object) => ({ ...p, label: undefined, category: undefined, enum: undefined, allowed: undefined });
      should(points.map(rest)).eql(english[key].map(rest));
    }
    should(german.powerLimit).eql(english.powerLimit);
  });

  it('serve any other editor language the English catalogue, and leave the runtime English', function () {
    const english = catalogueJson();
    for (const language of ['en-US', 'fr', undefined]) should(catalogueInLanguage(english, language)).equal(english);
    catalogueInLanguage(english, 'de');
    // What flows get (msg.payload labels) is the catalogue's English.
    should(describeValue(7101, 1)).eql({ value: 1, label: 'Self-consumed Prioritized' });
    should(READ_POINTS.find((p) => p.name === 'batterySoc')!.label).equal('Battery SOC total');
  });
});
