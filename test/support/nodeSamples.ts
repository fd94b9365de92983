/** Valid sample nodes for each catalog node type, shared by the unit and HTTP tests of payment nodes. */
import { expect } from 'chai';
import type { CatalogNodeType } from '../../src/catalog/catalog.ts';

export const cardNumber = '4111111111111111';

/** A plausible valid value per required field name. */
export const samples: Record<string, string> = {
  number: cardNumber,
  holder: 'Ana Souza',
  expiryMonth: '12',
  expiryYear: '2030',
  address: `0x${'ab'.repeat(20)}`,
  accountNumber: '000123456789',
  bank: 'Banco Ejemplo',
  accountHolder: 'Jane Doe',
  accountHolderDni: '12345678',
  key: 'payer@example.com',
  documentNumber: '12345678',
  documentType: 'CC',
  cvu: '0000003100010000000001',
  email: 'payer@example.com',
  clabe: '032180000118359719',
  phoneNumber: '+573001234567',
  routingNumber: '021000021',
  iban: 'DE89370400440532013000',
  sortCode: '123456',
  bic: 'DEUTDEFF',
};

export function validObject(type: CatalogNodeType): Record<string, string> {
  return Object.fromEntries(type.requiredFields.map((field) => {
    if (field === 'country') return [field, type.countries[0] === '*' ? 'USA' : type.countries[0]!];
    expect(samples, `sample for ${type.type}.${field}`).to.have.property(field);
    return [field, samples[field]!];
  }));
}

