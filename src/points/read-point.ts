/**
 * The shape of a read point, apart from the catalogue that lists them, so that what derives a meaning from a point
 * (home-assistant.ts) needs no import of the catalogue, which imports it back.
 */
export type ReadType = 'string' | 'num' | 'float' | 'enum';

export interface EnumOption {
  value: number;
  label: string;
  /** A value shipped devices report that the specification does not list. */
  beyondSpec?: true;
  source?: string;
}

/** Model classes whose point sets the maker's tables and the public integrations tell apart. */
export type ModelClass = '1600' | '2000';

export interface ReadPoint {
  direction: 'read';
  address: number;
  name: string;
  label: string;
  category: string;
  type: ReadType;
  unit?: string;
  /** Labels of enumerated values (also for Num points whose values the spec enumerates). */
  enum?: EnumOption[];
  /** Value encoding that needs more than a number, e.g. hour and minute packed into one number. */
  format?: 'hourMinute';
  note?: string;
  /** Name of the write point that changes this setting. */
  writtenBy?: string;
  /** A point shipped devices serve that the specification does not list; `source` says where it is documented. */
  beyondSpec?: true;
  source?: string;
  /** The model classes that serve the point, where the sources say. */
  models?: ModelClass[];
}
