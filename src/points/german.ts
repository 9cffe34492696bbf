/**
 * The catalogue's texts in German, for the editor of a German Node-RED and the German help: point labels by point
 * name, categories and enum labels by their English text. Only what the editor and help show changes; names,
 * addresses, units and everything the runtime sends (msg.payload labels, error messages) stay as the catalogue has them.
 */
import type { EnumOption, ModelReadPoint, ReadPoint, WritePoint } from './catalogue';

export interface CatalogueTexts {
  /** Point labels by point name. */
  points: Readonly<Record<string, string>>;
  /** Categories by the catalogue's (English) category. */
  categories: Readonly<Record<string, string>>;
  /** Enum labels by the catalogue's (English) label. */
  enums: Readonly<Record<string, string>>;
}

const BEYOND_SPEC = '(nicht in der Spezifikation)';

export const GERMAN: CatalogueTexts = {
  categories: {
    'Serial number and firmware': 'Seriennummer und Firmware',
    System: 'System',
    Cluster: 'Cluster (Verbund)',
    Bypass: 'Bypass',
    Energy: 'Energie',
    'Meter and grid': 'Zähler und Netz',
    Battery: 'Akku',
    'Battery unit MB': 'Akkueinheit MB',
    'Battery unit Pack1': 'Akkueinheit Pack1',
    'Battery unit Pack2': 'Akkueinheit Pack2',
    'Battery unit Pack3': 'Akkueinheit Pack3',
    'Battery unit Pack4': 'Akkueinheit Pack4',
    'Battery unit Pack5': 'Akkueinheit Pack5',
    PV: 'PV (DC-Eingänge)',
    'Real-time control read-back (beyond spec)': `Rückmeldung der Echtzeitsteuerung ${BEYOND_SPEC}`,
    'Device limits (beyond spec)': `Grenzen des Geräts ${BEYOND_SPEC}`,
    'Temperatures (beyond spec)': `Temperaturen ${BEYOND_SPEC}`,
    'Meter, 1600 class (beyond spec)': `Zähler, 1600er-Klasse ${BEYOND_SPEC}`,
    'Battery health (beyond spec)': `Akku-Gesundheitszustand ${BEYOND_SPEC}`,
    'Battery state (beyond spec)': `Akku-Betriebszustand ${BEYOND_SPEC}`,
    'System state (beyond spec)': `Systemzustand ${BEYOND_SPEC}`,
    'Working mode': 'Betriebsmodus',
    'Real-time control': 'Echtzeitsteuerung',
    Settings: 'Einstellungen',
  },
  points: {
    serialNumber: 'Seriennummer des Geräts',
    emsFirmware: 'EMS-Firmwareversion (2000er-Serie)',
    bmsMbFirmware: 'BMS-MB-Firmwareversion (2000er-Serie)',
    pcsFirmware: 'PCS-Firmwareversion (2000er-Serie)',
    dcdcFirmware: 'DCDC-Firmwareversion (2000er-Serie)',
    dcdc1Firmware: 'DCDC1-Firmwareversion (modulare Modelle)',
    bms1Firmware: 'BMS1-Firmwareversion (modulare Modelle)',
    dcdc2Firmware: 'DCDC2-Firmwareversion (modulare Modelle)',
    bms2Firmware: 'BMS2-Firmwareversion (modulare Modelle)',
    dcdc3Firmware: 'DCDC3-Firmwareversion (modulare Modelle)',
    bms3Firmware: 'BMS3-Firmwareversion (modulare Modelle)',
    dcdc4Firmware: 'DCDC4-Firmwareversion (modulare Modelle)',
    bms4Firmware: 'BMS4-Firmwareversion (modulare Modelle)',
    dcdc5Firmware: 'DCDC5-Firmwareversion (modulare Modelle)',
    bms5Firmware: 'BMS5-Firmwareversion (modulare Modelle)',
    workingMode: 'Betriebsmodus',
    ratedCapacity: 'Nennkapazität',
    gridCharging: 'Laden aus dem Netz',
    inverterInputLimit: 'Eingangsgrenze des Wechselrichters',
    acInputPower: 'AC-Eingangsleistung gesamt',
    acOutputPower: 'AC-Ausgangsleistung gesamt',
    feedInPowerLimit: 'Einspeisegrenze',
    maxAcOutputPower: 'Maximale AC-Ausgangsleistung',
    bypass: 'Bypass',
    bypassMode: 'Bypass-Modus',
    backupSoc: 'Backup-SOC (Reserve)',
    light: 'Licht',
    calibrationCycle: 'Kalibrierzyklus des Akkus',
    calibrationStartTime: 'Startzeit der Akku-Kalibrierung',
    calibrationChargePower: 'Ladeleistung der Akku-Kalibrierung (AC)',
    masterSlave: 'Master/Slave-Kennung',
    bypassPower: 'Bypass-Leistung',
    acInputEnergyTotal: 'AC-Eingangsenergie gesamt',
    acOutputEnergyTotal: 'AC-Ausgangsenergie gesamt',
    bypassMinvInputEnergyDaily: 'Bypass-Eingangsenergie vom Mikrowechselrichter (M-Inv) heute',
    bypassMinvInputEnergyTotal: 'Bypass-Eingangsenergie vom Mikrowechselrichter (M-Inv) gesamt',
    offGridBypassOutputEnergyDaily: 'Bypass-Ausgangsenergie im Inselbetrieb heute',
    offGridBypassOutputEnergyTotal: 'Bypass-Ausgangsenergie im Inselbetrieb gesamt',
    bypassOutputEnergyDaily: 'Bypass-Ausgangsenergie heute',
    bypassOutputEnergyTotal: 'Bypass-Ausgangsenergie gesamt',
    pvEnergyDaily: 'PV-Erzeugung heute',
    pvEnergyTotal: 'PV-Erzeugung gesamt',
    batteryChargeEnergyDaily: 'Akku-Ladeenergie heute',
    batteryDischargeEnergyDaily: 'Akku-Entladeenergie heute',
    batteryChargeEnergyTotal: 'Akku-Ladeenergie gesamt',
    batteryDischargeEnergyTotal: 'Akku-Entladeenergie gesamt',
    gridPower: 'Netzleistung',
    meterStatus: 'Verbindungsstatus des Zählers',
    meterPower: 'Zählerleistung',
    gridVoltage: 'Netzspannung',
    gridFrequency: 'Netzfrequenz',
    batteryState: 'Lade-/Entladezustand des Akkus',
    batteryPower: 'Akkuleistung',
    batterySoc: 'Akku-Ladezustand (SOC) gesamt',
    mbSerialNumber: 'MB-Seriennummer',
    mbSoc: 'MB-Ladezustand (SOC)',
    mbVoltage: 'MB-Spannung',
    mbCurrent: 'MB-Strom',
    mbTemperature: 'MB-Temperatur',
    mbCell1Voltage: 'MB-Zellspannung 1',
    mbCell2Voltage: 'MB-Zellspannung 2',
    pack1SerialNumber: 'Pack1-Seriennummer',
    pack1Soc: 'Pack1-Ladezustand (SOC)',
    pack1Voltage: 'Pack1-Spannung',
    pack1Current: 'Pack1-Strom',
    pack1Temperature: 'Pack1-Temperatur',
    pack1Cell1Voltage: 'Pack1-Zellspannung 1',
    pack1Cell2Voltage: 'Pack1-Zellspannung 2',
    pack2SerialNumber: 'Pack2-Seriennummer',
    pack2Soc: 'Pack2-Ladezustand (SOC)',
    pack2Voltage: 'Pack2-Spannung',
    pack2Current: 'Pack2-Strom',
    pack2Temperature: 'Pack2-Temperatur',
    pack2Cell1Voltage: 'Pack2-Zellspannung 1',
    pack2Cell2Voltage: 'Pack2-Zellspannung 2',
    pack3SerialNumber: 'Pack3-Seriennummer',
    pack3Soc: 'Pack3-Ladezustand (SOC)',
    pack3Voltage: 'Pack3-Spannung',
    pack3Current: 'Pack3-Strom',
    pack3Temperature: 'Pack3-Temperatur',
    pack3Cell1Voltage: 'Pack3-Zellspannung 1',
    pack3Cell2Voltage: 'Pack3-Zellspannung 2',
    pack4SerialNumber: 'Pack4-Seriennummer',
    pack4Soc: 'Pack4-Ladezustand (SOC)',
    pack4Voltage: 'Pack4-Spannung',
    pack4Current: 'Pack4-Strom',
    pack4Temperature: 'Pack4-Temperatur',
    pack4Cell1Voltage: 'Pack4-Zellspannung 1',
    pack4Cell2Voltage: 'Pack4-Zellspannung 2',
    pack5SerialNumber: 'Pack5-Seriennummer',
    pack5Soc: 'Pack5-Ladezustand (SOC)',
    pack5Voltage: 'Pack5-Spannung',
    pack5Current: 'Pack5-Strom',
    pack5Temperature: 'Pack5-Temperatur',
    pack5Cell1Voltage: 'Pack5-Zellspannung 1',
    pack5Cell2Voltage: 'Pack5-Zellspannung 2',
    pvPower: 'PV-Leistung gesamt (DC)',
    pv1Current: 'Strom an DC-Eingang 1',
    pv1Voltage: 'Spannung an DC-Eingang 1',
    pv1Power: 'Leistung an DC-Eingang 1',
    pv2Current: 'Strom an DC-Eingang 2',
    pv2Voltage: 'Spannung an DC-Eingang 2',
    pv2Power: 'Leistung an DC-Eingang 2',
    pv3Current: 'Strom an DC-Eingang 3',
    pv3Voltage: 'Spannung an DC-Eingang 3',
    pv3Power: 'Leistung an DC-Eingang 3',
    pv4Current: 'Strom an DC-Eingang 4',
    pv4Voltage: 'Spannung an DC-Eingang 4',
    pv4Power: 'Leistung an DC-Eingang 4',
    controlStateReadback: 'Zustand der Echtzeitsteuerung (Rückmeldung)',
    controlSocReadback: 'SOC der Echtzeitsteuerung (Rückmeldung)',
    controlPowerReadback: 'Leistungsgrenze der Echtzeitsteuerung (Rückmeldung)',
    maxChargePower: 'Maximale Ladeleistung',
    maxDischargePower: 'Maximale Entladeleistung',
    inverterTemperature: 'Wechselrichtertemperatur',
    pack1Temperature1600: 'Temperatur Akkupack 1 (1600er-Klasse)',
    pack2Temperature1600: 'Temperatur Akkupack 2 (1600er-Klasse)',
    pack3Temperature1600: 'Temperatur Akkupack 3 (1600er-Klasse)',
    meterPower1600: 'Zählerleistung (1600er-Klasse)',
    mbSoh: 'MB-Gesundheitszustand (SOH)',
    mbCycleCount: 'MB-Ladezyklen',
    pack1Soh: 'Pack1-Gesundheitszustand (SOH)',
    pack1CycleCount: 'Pack1-Ladezyklen',
    pack2Soh: 'Pack2-Gesundheitszustand (SOH)',
    pack2CycleCount: 'Pack2-Ladezyklen',
    pack3Soh: 'Pack3-Gesundheitszustand (SOH)',
    pack3CycleCount: 'Pack3-Ladezyklen',
    pack4Soh: 'Pack4-Gesundheitszustand (SOH)',
    pack4CycleCount: 'Pack4-Ladezyklen',
    pack5Soh: 'Pack5-Gesundheitszustand (SOH)',
    pack5CycleCount: 'Pack5-Ladezyklen',
    heatingState: 'Heizungszustand',
    mbDcdcState: 'MB-DC/DC-Zustand',
    mbHeatingState: 'MB-Heizungszustand',
    pack1DcdcState: 'Pack1-DC/DC-Zustand',
    pack1HeatingState: 'Pack1-Heizungszustand',
    pack2DcdcState: 'Pack2-DC/DC-Zustand',
    pack2HeatingState: 'Pack2-Heizungszustand',
    pack3DcdcState: 'Pack3-DC/DC-Zustand',
    pack3HeatingState: 'Pack3-Heizungszustand',
    pack4DcdcState: 'Pack4-DC/DC-Zustand',
    pack4HeatingState: 'Pack4-Heizungszustand',
    pack5DcdcState: 'Pack5-DC/DC-Zustand',
    pack5HeatingState: 'Pack5-Heizungszustand',
    systemStatus: 'Betriebszustand des Systems',
    homeLoadPower: 'Hausverbrauch',
    systemSoc: 'System-Ladezustand (SOC, alle Einheiten)',
    chargeTimeLeft: 'Verbleibende Ladezeit',
    dischargeTimeLeft: 'Verbleibende Entladezeit',
    workingModeSetting: 'Betriebsmodus einstellen',
    controlState: 'Zustand einstellen',
    controlPower: 'Leistung einstellen',
    controlSoc: 'SOC einstellen',
    maxAcOutputPowerSetting: 'Maximale AC-Ausgangsleistung einstellen',
    feedInPowerLimitSetting: 'Einspeisegrenze einstellen',
    gridChargingSetting: 'Laden aus dem Netz einstellen',
    inverterInputLimitSetting: 'Eingangsgrenze des Wechselrichters einstellen',
    loadSetting: 'Lastquelle einstellen',
    bypassSetting: 'Bypass einstellen',
    backupSocSetting: 'Backup-SOC (Reserve) einstellen',
    lightSetting: 'Licht einstellen',
  },
  enums: {
    'Outdoor Portable': 'Mobiler Outdoor-Betrieb',
    'Self-consumed Prioritized': 'Eigenverbrauch vorrangig',
    'Real-time Control': 'Echtzeitsteuerung',
    'Charge/Discharge Schedule': 'Lade-/Entladezeitplan',
    Disable: 'Deaktiviert',
    Enable: 'Aktiviert',
    Eps: 'EPS (Notstrom)',
    'M-Inv': 'M-Inv (Mikrowechselrichter)',
    Master: 'Master (Hauptgerät)',
    Slave: 'Slave (Nebengerät)',
    None: 'Keine',
    Static: 'Ruhend',
    Charging: 'Laden',
    Discharging: 'Entladen',
    Standby: 'Standby',
    Protection: 'Schutz',
    Off: 'Aus',
    On: 'Ein',
    'Powered Off': 'Ausgeschaltet',
    Sleep: 'Ruhezustand',
    Starting: 'Startet',
    'MPPT Operating': 'MPPT in Betrieb',
    'Current Limiting': 'Strombegrenzung',
    'Shutting Down': 'Fährt herunter',
    'INV Fault': 'Wechselrichterfehler',
    'Grid Charging': 'Laden aus dem Netz',
    'Grid Discharging': 'Entladen ins Netz',
    'Off-grid Charging': 'Laden im Inselbetrieb',
    'Off-grid Discharging': 'Entladen im Inselbetrieb',
    'Low Battery Charging (to Backup SOC)': 'Nachladen bei niedrigem Akkustand (bis zum Backup-SOC)',
    'Deep Sleep': 'Tiefschlaf',
    'Scheduled Full Charge': 'Geplante Vollladung',
    'Off-grid Deep Sleep': 'Tiefschlaf im Inselbetrieb',
    'Smart Plug': 'Smarte Steckdose',
    Meter: 'Zähler',
    'Key Load': 'Wichtige Last',
    Custom: 'Benutzerdefiniert',
  },
};

/** Whether an editor language (Node-RED's RED.i18n.lang(), e.g. "de" or "de-AT") is German. */
export function isGerman(language: unknown): boolean {
  return typeof language === 'string' && /^de(-|$)/i.test(language);
}

/**
 * A catalogue point with its label, category and enum labels in German (the English text where the table lacks one,
 * which the tests refuse); name, address, unit and the rest stay.
 */
export function inGerman<P extends { name: string; label: string; category: string; enum?: EnumOption[] }>(point: P): P {
  return {
    ...point,
    label: GERMAN.points[point.name] ?? point.label,
    category: GERMAN.categories[point.category] ?? point.category,
    ...(point.enum ? { enum: point.enum.map((o) => ({ ...o, label: GERMAN.enums[o.label] ?? o.label })) } : {}),
  };
}

/**
 * What a write point accepts within the specification's bounds, in German (describeAllowed's words in English), with
 * the point's own enum labels: pass it the point inGerman.
 */
export function allowedInGerman(point: WritePoint): string {
  if (point.enum) return `einer der Werte ${point.enum.map((o) => `${o.value} (${o.label})`).join(', ')}`;
  return `eine ganze Zahl von ${point.min} bis ${point.max}${point.unit ? ' ' + point.unit : ''}`;
}

/** The catalogue as catalogueJson() serves it, or a copy of it with more members. */
interface CatalogueShape {
  read: ReadPoint[];
  modelRead: ModelReadPoint[];
  write: (WritePoint & { allowed: string })[];
}

/**
 * The catalogue for an editor in `language` (RED.i18n.lang()): in German its points' labels, categories and enum
 * labels and the words for what a write point accepts; in any other language the catalogue's English.
 */
export function catalogueInLanguage<C extends CatalogueShape>(catalogue: C, language: unknown): C {
  if (!isGerman(language)) return catalogue;
  return {
    ...catalogue,
    read: catalogue.read.map(inGerman),
    modelRead: catalogue.modelRead.map(inGerman),
    write: catalogue.write.map(inGerman).map((p) => ({ ...p, allowed: allowedInGerman(p) })),
  };
}
